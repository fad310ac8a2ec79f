"""The ``fleetchaos`` command line (click + rich).

``main`` is the console script; ``python -m fleetchaos.cli`` runs the same.
"""

from fleetchaos.cli.main import main

__all__ = ["main"]
