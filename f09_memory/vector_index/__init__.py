"""Vector index (index 7): nearest-neighbour search over one agent's record vectors.

Modules: ``exact`` (ExactIndex: brute-force cosine over a contiguous float32 matrix, the
baseline, reproducible everywhere), ``hnsw`` (HnswIndex: hnswlib HNSW graph built
deterministically, for large agents), ``hnsw_graph`` (checked_graph: a serialized hnswlib
graph verified before hnswlib, which trusts it, is given it), ``select`` (make_index picks
one by size; recall_at_k measures an approximate index), ``ordering`` (the shared result
order: quantized similarity desc, then key asc), ``checks`` (argument checks shared by both
indexes), ``kernels`` (``similarities``: the matrix-vector product over stored vectors,
computed on the calling thread, never on BLAS worker threads). The contract,
``VectorIndex``, lives in :mod:`f09_memory.protocols`; keys are int64 record keys.
"""

from f09_memory.vector_index.checks import as_keys, as_query, as_vectors, check_k, unit_rows
from f09_memory.vector_index.exact import ExactIndex
from f09_memory.vector_index.hnsw import HnswIndex
from f09_memory.vector_index.kernels import similarities
from f09_memory.vector_index.ordering import DEFAULT_QUANTUM, check_quantum, quantize, rank_top_k
from f09_memory.vector_index.select import make_index, recall_at_k

__all__ = [
    "DEFAULT_QUANTUM",
    "ExactIndex",
    "HnswIndex",
    "as_keys",
    "as_query",
    "as_vectors",
    "check_k",
    "check_quantum",
    "make_index",
    "quantize",
    "rank_top_k",
    "recall_at_k",
    "similarities",
    "unit_rows",
]
