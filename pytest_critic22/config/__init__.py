"""The run's configuration: the options and ini values, read once into frozen settings, and
the review's inputs read from disk.
"""
