"""Where patch and critic code run: git, the trees, the sandbox, the child processes, and the
one way to run pytest in a tree (with the fork-server's controller side and the batcher).
"""
