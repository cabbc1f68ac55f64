"""The child process of :class:`~f09_memory.embedding.process.ProcessEmbedder`.

``python -m f09_memory.embedding._child FD`` serves the embedding requests that arrive on the
inherited socket ``FD`` (:func:`~f09_memory.embedding.process.serve`). A module of its own,
which the package never imports, so running it never re-executes an imported module.
"""

from __future__ import annotations

import socket
import sys

from f09_memory.embedding.process import serve

__all__: list[str] = []

if __name__ == "__main__":
    with socket.socket(fileno=int(sys.argv[1])) as channel:
        serve(channel)
