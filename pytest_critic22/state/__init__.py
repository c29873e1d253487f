"""The repository's state folder ``.critic22/``: the folder itself, the append-only ledger, and
which process owns a run.
"""
