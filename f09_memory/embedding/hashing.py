"""HashingEmbedder: a deterministic, dependency-free embedding by signed feature hashing.

Each text becomes a bag of weighted features, hashed into ``dim`` buckets:

* unigrams (weight 1.0): lowercase word tokens ``[a-z0-9]+`` after removing the
  possessive ``'s`` (so ``"Smith's"`` -> ``smith``);
* stems (weight 0.5): a light suffix-stripping stem of words of 4+ characters, cut to 5
  characters, so ``smith``/``smiths``/``smith's`` and ``trade``/``trading``/``traded`` share
  a feature and land near each other;
* bigrams (weight 0.5): adjacent word pairs, which keep a little word order.

Stable hashing, never the builtin ``hash()``: a word's unigram and stem buckets and signs
come from CRC-32 checksums of their UTF-8 bytes, each started from a seed-derived value
(``bucket = crc_a % dim``; the sign, +1 or -1, from the low bit of a second checksum
``crc_b``). A bigram's bucket and sign come from mixing its two words' 64-bit CRC codes with a
fixed integer mixer (splitmix64 finalizer; bucket from the high 32 bits, sign from bit 0).
Vectors are therefore identical in every process whatever ``PYTHONHASHSEED`` is, and on every
machine; a different seed gives an unrelated hashing.

Rows are L2-normalized float32. A text with no word token (``""``, ``"!!!"``) embeds to the
all-zero vector: it is similar to nothing (cosine 0 against every vector).

Speed: each instance keeps a bounded cache from a word to a small integer id, with the word's
buckets, signed weights and CRC code in numpy arrays. A batch is tokenized with ``re``, mapped
to ids with C-level dict lookups, and assembled with numpy gathers and one ``numpy.bincount``
over flat ``row * dim + bucket`` indices: no per-feature or per-dimension Python work.
"""

from __future__ import annotations

import itertools
import re
import zlib
from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from f09_memory.embedding.batching import check_texts
from f09_memory.errors import ConfigInvalidError

__all__ = ["HashingEmbedder"]

_TOKEN = re.compile(r"[a-z0-9]+")
_POSSESSIVE = re.compile(r"['\u2019]s\b")
_SUFFIXES = ("ing", "ers", "ies", "ed", "es", "er", "ly", "s", "e")
_STEM_LEN = 5
_STEM_MIN_WORD = 4
_UNIGRAM_WEIGHT = 1.0
_BIGRAM_WEIGHT = 0.5
_STEM_WEIGHT = 0.5
_DEFAULT_CACHE_MAX = 200_000
_MEMO_TEXTS = 16_384
_MEMO_CHARS = 256
"""Texts whose word ids are kept, and the longest kept (observations are short and repeat;
long texts rarely do): at most about 6 MB."""
_CHUNK = 2048  # texts per bincount, bounding scratch memory to CHUNK * dim float64
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX_1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX_2 = np.uint64(0x94D049BB133111EB)


def _stem(word: str) -> str:
    """Strip one common English suffix (keeping 3+ characters), then cut to 5 characters."""
    for suffix in _SUFFIXES:
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:_STEM_LEN]


def _mix64(x: NDArray[np.uint64]) -> NDArray[np.uint64]:
    """Splitmix64 finalizer (wrapping uint64 arithmetic, element-wise)."""
    x = x ^ (x >> np.uint64(30))
    x = x * _MIX_1
    x = x ^ (x >> np.uint64(27))
    x = x * _MIX_2
    return x ^ (x >> np.uint64(31))


class HashingEmbedder:
    """Deterministic feature-hashing embedder (implements ``EmbeddingProvider``).

    Example:
        >>> emb = HashingEmbedder(64)
        >>> emb.embed(["the smith's forge"]).shape
        (1, 64)
        >>> emb.version
        'hashing-v1-d64-s0'

    Args:
        dim: Vector dimension (>= 2); usually ``MemoryConfig.embedding_dim``.
        seed: Seeds the feature hash (>= 0); part of :attr:`version`.
        cache_max: The word cache is cleared before a batch once it holds more than this
            many words. The cache only saves time: vectors never depend on it.

    Raises:
        ConfigInvalidError: ``dim`` < 2, ``seed`` < 0, or ``cache_max`` < 1.

    """

    available = True
    """Always True: this provider needs nothing outside the package."""

    tick_cost_units = 2_000
    """Work units ``tick`` charges per text re-embedded (about 10 µs here, in batches)."""

    def __init__(self, dim: int = 384, *, seed: int = 0, cache_max: int = _DEFAULT_CACHE_MAX):
        for name, value, low in (("dim", dim, 2), ("seed", seed, 0), ("cache_max", cache_max, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ConfigInvalidError(
                    f"HashingEmbedder {name} must be an int >= {low}, got {value!r}",
                    details={"field": name, "value": repr(value)},
                )
        self._dim = dim
        self._seed = seed
        self._cache_max = cache_max
        self._salt_bucket = zlib.crc32(f"f09-hashing-bucket:{seed}".encode())
        self._salt_sign = zlib.crc32(f"f09-hashing-sign:{seed}".encode())
        self._salt_code_hi = zlib.crc32(f"f09-hashing-code-hi:{seed}".encode())
        self._salt_code_lo = zlib.crc32(f"f09-hashing-code-lo:{seed}".encode())
        self._reset_cache(64)

    def _reset_cache(self, capacity: int) -> None:
        self._ids: dict[str, int] = {}
        self._texts: dict[str, tuple[int, ...]] = {}
        self._texts_max = max(1, min(_MEMO_TEXTS, self._cache_max // 4))
        self._uni_col = np.zeros(capacity, dtype=np.int64)
        self._uni_w = np.zeros(capacity, dtype=np.float64)
        self._stem_col = np.zeros(capacity, dtype=np.int64)
        self._stem_w = np.zeros(capacity, dtype=np.float64)
        self._code = np.zeros(capacity, dtype=np.uint64)

    @property
    def dim(self) -> int:
        """Vector dimension."""
        return self._dim

    @property
    def seed(self) -> int:
        """The hashing seed."""
        return self._seed

    @property
    def version(self) -> str:
        """``hashing-v1-d{dim}-s{seed}``; changes whenever the vectors would change."""
        return f"hashing-v1-d{self._dim}-s{self._seed}"

    def _bucket(self, feature: str) -> tuple[int, float]:
        data = feature.encode("utf-8")
        sign = 1.0 if zlib.crc32(data, self._salt_sign) & 1 else -1.0
        return zlib.crc32(data, self._salt_bucket) % self._dim, sign

    def _learn(self, words: list[str]) -> None:
        """Assign ids and compute the features of ``words`` (new, distinct, in order)."""
        start = len(self._ids)
        stop = start + len(words)
        capacity = self._uni_col.shape[0]
        if stop > capacity:
            while capacity < stop:
                capacity *= 2
            for name in ("_uni_col", "_uni_w", "_stem_col", "_stem_w", "_code"):
                old = getattr(self, name)
                grown = np.zeros(capacity, dtype=old.dtype)
                grown[:start] = old[:start]
                setattr(self, name, grown)
        uni_col: list[int] = []
        uni_w: list[float] = []
        stem_col: list[int] = []
        stem_w: list[float] = []
        codes: list[int] = []
        for word in words:
            col, sign = self._bucket("u:" + word)
            uni_col.append(col)
            uni_w.append(sign * _UNIGRAM_WEIGHT)
            if len(word) >= _STEM_MIN_WORD:
                scol, ssign = self._bucket("s:" + _stem(word))
                stem_col.append(scol)
                stem_w.append(ssign * _STEM_WEIGHT)
            else:
                stem_col.append(0)
                stem_w.append(0.0)
            data = ("b:" + word).encode("utf-8")
            codes.append(
                (zlib.crc32(data, self._salt_code_hi) << 32) | zlib.crc32(data, self._salt_code_lo)
            )
        self._uni_col[start:stop] = uni_col
        self._uni_w[start:stop] = uni_w
        self._stem_col[start:stop] = stem_col
        self._stem_w[start:stop] = stem_w
        self._code[start:stop] = np.array(codes, dtype=np.uint64)
        self._ids.update(zip(words, range(start, stop), strict=True))

    def tokens(self, text: str) -> list[str]:
        """Return the word tokens of ``text`` (lowercase, possessive ``'s`` removed).

        Args:
            text: Any text.

        Returns:
            The tokens in order.

        """
        return _TOKEN.findall(_POSSESSIVE.sub("", text.lower()))

    def _text_ids(self, items: list[str]
                  ) -> tuple[Sequence[Sequence[int]], list[int] | None]:
        """The word ids of each text, in order (texts seen before are not tokenized again).

        Returns ``(per text, flat)``: ``flat`` is every id in order when no text was seen
        before (else ``None``).

        Game observations repeat (templates, the same place names): the ids of a text of at
        most ``_MEMO_CHARS`` characters are kept in a table of at most ``_MEMO_TEXTS``
        texts (``cache_max // 4`` if smaller), emptied when full and with the word cache
        (the ids index it). Only time is saved: the ids name the same words.
        """
        memo = self._texts
        out: list[tuple[int, ...] | None] = list(map(memo.get, items))
        if None not in out:
            return out, None  # type: ignore[return-value]  # every text was seen
        misses = [i for i, known in enumerate(out) if known is None]
        tokenized = [self.tokens(items[i]) for i in misses]
        words = list(itertools.chain.from_iterable(tokenized))
        ids_of = self._ids
        unknown = [word for word in words if word not in ids_of]
        if unknown:
            self._learn(list(dict.fromkeys(unknown)))
        found = list(map(ids_of.__getitem__, words))  # every word is known now
        if len(memo) + len(misses) > self._texts_max:
            memo.clear()
        at = 0
        for i, text_words in zip(misses, tokenized, strict=True):
            end = at + len(text_words)
            out[i] = ids = tuple(found[at:end])
            at = end
            text = items[i]
            if len(text) <= _MEMO_CHARS:
                memo[text] = ids
        done: list[tuple[int, ...]] = out  # type: ignore[assignment]  # no None is left
        return done, found if len(misses) == len(items) else None

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        """Embed ``texts`` in order.

        Runtime complexity: ``O(total words + n * dim)``.

        Args:
            texts: A sequence of str (not a bare str).

        Returns:
            Float32 array of shape ``(len(texts), dim)``; unit rows, zero rows for texts with
            no word token; ``(0, dim)`` for an empty sequence.

        Raises:
            InputInvalidError: ``texts`` is not a sequence of str.

        """
        items = check_texts(texts)
        if len(self._ids) > self._cache_max:
            self._reset_cache(64)
        if len(items) <= _CHUNK:
            return self._embed_chunk(items)
        out = np.empty((len(items), self._dim), dtype=np.float32)
        for start in range(0, len(items), _CHUNK):
            out[start : start + _CHUNK] = self._embed_chunk(items[start : start + _CHUNK])
        return out

    def _embed_chunk(self, items: list[str]) -> NDArray[np.float32]:
        n = len(items)
        dim = self._dim
        if n == 0:
            return np.zeros((0, dim), dtype=np.float32)
        per_text, in_order = self._text_ids(items)
        counts = np.fromiter(map(len, per_text), dtype=np.int64, count=n)
        total = int(counts.sum())
        if total == 0:  # no text has a word: all rows are zero
            return np.zeros((n, dim), dtype=np.float32)
        ids = (np.array(in_order, dtype=np.int64) if in_order is not None else
               np.fromiter(itertools.chain.from_iterable(per_text), dtype=np.int64, count=total))
        # bigrams: adjacent tokens of the same text (one text: every adjacent pair, all in
        # row 0, so the row offsets are left out: the same cells, the same floats)
        if n == 1:
            first, second = ids[:-1], ids[1:]
        else:
            row_base = np.repeat(np.arange(n, dtype=np.int64) * dim, counts)
            same_text = row_base[:-1] == row_base[1:]
            first, second = ids[:-1][same_text], ids[1:][same_text]
        mixed = _mix64(self._code[first] * _GOLDEN + self._code[second])
        bigram_col = ((mixed >> np.uint64(32)) % np.uint64(dim)).astype(np.int64)
        bigram_w = np.where(mixed & np.uint64(1), _BIGRAM_WEIGHT, -_BIGRAM_WEIGHT)
        cols = (self._uni_col[ids], self._stem_col[ids], bigram_col)
        if n > 1:
            cols = (cols[0] + row_base, cols[1] + row_base, cols[2] + row_base[:-1][same_text])
        flat = np.concatenate(cols)
        weights = np.concatenate((self._uni_w[ids], self._stem_w[ids], bigram_w))
        matrix = np.bincount(flat, weights=weights, minlength=n * dim).reshape(n, dim)
        norms = np.sqrt(np.einsum("ij,ij->i", matrix, matrix))
        if n == 1:
            norm = float(norms[0])
            np.multiply(matrix, 1.0 / norm if norm > 0.0 else 0.0, out=matrix)
        else:
            scale = np.zeros_like(norms)
            np.divide(1.0, norms, out=scale, where=norms > 0.0)
            matrix *= scale[:, None]
        return matrix.astype(np.float32)
