"""pytest-critic22: a critic proposes falsifiable findings; generated tests decide.

Importing the package is cheap on purpose: pytest loads it for every run through the
``pytest11`` entry point, and only ``--critic22`` pulls in the pipeline.
"""

from __future__ import annotations

__version__ = "0.1.0"
__all__ = ["__version__"]
