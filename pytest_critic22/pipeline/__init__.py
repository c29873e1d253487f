"""The review pipeline as plain functions: evidence, packet, critic, routing, and the gate
that turns typed results into a verdict.
"""
