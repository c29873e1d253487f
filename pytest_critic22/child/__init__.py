"""What runs inside the sandboxed child pytest: the fork-server, the rerun plugin, the tracer.

Every module here imports nothing of the package but :mod:`pytest_critic22.child.protocol`
(the constants both sides share), as pytest-xdist's ``remote.py`` does: the child side stays
small, and what crosses the boundary is written down once.
"""
