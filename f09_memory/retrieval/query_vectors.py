"""The query vectors of async embedding mode: engine state, applied at logical ticks.

In ``embedding_mode="async"`` a new query text is not embedded inside ``retrieve``: it is
handed to the embedding worker, and its vector enters this table at the first ``tick`` at or
after ``request time + embedding_latency_ms``. Until then a request with that text has no
semantic term (``semantic_fallback == "QUERY_PENDING"``), in every run; from then on it has.
Because the table decides retrieval results, it is part of the engine's state: saved with
snapshots, journaled in durable mode and covered by ``state_hash``.

The table keeps at most ``capacity`` texts; the oldest entry leaves first. Each entry has a
sequence number, and the table's digest is the sum (mod 2**128) of the entries' digests over
``(sequence, text, vector bytes)``, so it is maintained in O(1) per change and depends on the
entries and their order only.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

__all__ = ["QueryVectors"]

_MASK128 = (1 << 128) - 1


def _entry_digest(seq: int, text: str, vector: NDArray[np.float32]) -> int:
    h = hashlib.sha256(seq.to_bytes(8, "little"))
    h.update(text.encode("utf-8", "surrogatepass"))
    h.update(b"\x00")
    h.update(np.ascontiguousarray(vector, dtype="<f4").tobytes())
    return int.from_bytes(h.digest()[:16], "big")


class QueryVectors:
    """Query text -> unit vector, oldest first, at most ``capacity`` entries.

    Args:
        capacity: Entries kept (the oldest is evicted past it).
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self._entries: OrderedDict[str, tuple[int, NDArray[np.float32]]] = OrderedDict()
        self._next = 0
        self._sum = 0
        self.journal: list[tuple[Any, ...]] | None = None
        """Durable mode: each :meth:`add` is appended as a ``query.vectors`` effect."""

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, text: object) -> bool:
        return text in self._entries

    def get(self, text: str) -> NDArray[np.float32] | None:
        """The vector of ``text``, or ``None`` while it has none."""
        hit = self._entries.get(text)
        return None if hit is None else hit[1]

    def add(self, texts: Sequence[str], vectors: NDArray[np.float32]) -> None:
        """Enter the vectors of ``texts`` (in order), evicting the oldest past capacity.

        A text already present keeps its first vector.
        """
        if self.journal is not None:
            self.journal.append(("query.vectors", list(texts),
                                 np.array(vectors, dtype=np.float32)))
        for text, vector in zip(texts, vectors, strict=True):
            if text in self._entries:
                continue
            if len(self._entries) >= self.capacity:
                gone, (seq, old) = self._entries.popitem(last=False)
                self._sum = (self._sum - _entry_digest(seq, gone, old)) & _MASK128
            row = np.array(vector, dtype=np.float32)
            self._entries[text] = (self._next, row)
            self._sum = (self._sum + _entry_digest(self._next, text, row)) & _MASK128
            self._next += 1

    def digest(self) -> str | None:
        """Hex digest of the table (``None`` when it never held anything)."""
        if self._next == 0:
            return None
        return f"{self._next}:{self._sum:032x}"

    def get_state(self) -> tuple[dict[str, Any], NDArray[np.float32]]:
        """``({"next", "texts", "seqs"}, vectors)`` for snapshots, oldest first."""
        texts = list(self._entries)
        rows = [self._entries[t][1] for t in texts]
        dim = rows[0].shape[0] if rows else 0
        vectors = np.stack(rows) if rows else np.zeros((0, dim), dtype=np.float32)
        return {"next": self._next, "texts": texts,
                "seqs": [self._entries[t][0] for t in texts]}, vectors

    def set_state(self, meta: dict[str, Any], vectors: NDArray[np.float32]) -> None:
        """Restore from :meth:`get_state`.

        Raises:
            ValueError: Malformed (texts, sequence numbers and rows disagree).
        """
        texts = [str(t) for t in meta["texts"]]
        seqs = [int(s) for s in meta["seqs"]]
        nxt = int(meta["next"])
        arr = np.asarray(vectors, dtype=np.float32)
        if len(texts) != len(seqs) or arr.ndim != 2 or arr.shape[0] != len(texts) or (
                len(set(texts)) != len(texts) or seqs != sorted(set(seqs))
                or (seqs and (seqs[0] < 0 or seqs[-1] >= nxt)) or len(texts) > self.capacity
                or not np.isfinite(arr).all()):
            raise ValueError("malformed query vectors")
        self._entries = OrderedDict(
            (t, (s, arr[i].copy())) for i, (t, s) in enumerate(zip(texts, seqs, strict=True)))
        self._next = nxt
        self._sum = sum(_entry_digest(s, t, arr[i])
                        for i, (t, s) in enumerate(zip(texts, seqs, strict=True))) & _MASK128

    def reset(self) -> None:
        """Back to a new, empty table (before a restore); nothing is journaled."""
        self._entries.clear()
        self._next = self._sum = 0

    def clear(self) -> None:
        """Forget every vector (a new embedder)."""
        if self.journal is not None:
            self.journal.append(("query.clear",))
        self._entries.clear()
        self._sum = 0
