"""Impact evidence: what the patch touches (the libcst code graph, measured coverage), and
the code the packet shows the critic.
"""
