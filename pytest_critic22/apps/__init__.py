"""The applications on top of the plugin: the Python API, the ``critic22`` command, the review
loop, ``critic22 ab`` and ``critic22 mine``.
"""
