"""The critic: whether to engage it, its one bounded call, its prompts, and the parser that
enforces its only output (the ``ReviewFinding``).
"""
