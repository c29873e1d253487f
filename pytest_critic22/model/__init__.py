"""The frozen values every stage passes on: the patch, the packet, the procedure, the results.

Pure: importable by every layer, importing nothing above it.
"""
