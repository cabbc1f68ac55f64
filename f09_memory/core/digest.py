"""The incremental state hash: its cost follows changes, not size.

``state_hash = sha256(header, then one digest per agent in id order)`` where

- the header is the canonical JSON of the config fingerprint, clock, pressure, cursors, the
  summarizer's state, the embedder version, (async embedding mode) the query table's
  digest and the digests of the state tables that were ever used (``core.tables``);
- an agent's digest is sha256 of its id, id counter, novelty-vocabulary digest and the sum
  (mod 2**128) of its records' 16-byte digests. A record's digest covers every stored field
  (quantized importance, times, layer, flags, status, text, tags, sparse metadata); it is
  computed lazily, once per change of the record (``store.digests.refresh_digest``).

The sum is order-independent and canonical: the same records give the same digest however
they were inserted, so the hash is the same in any process and after save/load.
"""

from __future__ import annotations

import hashlib
import struct
from typing import Any

from f09_memory.canonical import canonical_json, sha256_hex
from f09_memory.config.config import MemoryConfig
from f09_memory.core.state import EngineState
from f09_memory.store.digests import refresh_digest

__all__ = ["config_fingerprint", "state_hash"]

_AGENT = struct.Struct("<q16sQQqq")


def config_fingerprint(config: MemoryConfig) -> str:
    """sha256 of the config's canonical JSON: different settings, different state hash."""
    return sha256_hex(config.to_json_dict())


def state_hash(state: EngineState, fingerprint: str, summarizer_state: dict[str, Any],
               embedder_version: str | None, queries: str | None = None) -> str:
    """sha256 hex of the whole state (see the module docstring).

    Runtime complexity: O(agents) plus O(records changed since the last call).
    """
    quantum = state.config.score_quantum
    header = {
        "config": fingerprint,
        "clock": state.clock,
        "pressure": state.pressure.value,
        "tickCursor": state.tick_cursor,
        "compactionCursor": state.compaction.get_state(),
        "summarizer": summarizer_state,
        "embedder": embedder_version,
    }
    if queries is not None:  # async embedding mode's query table (absent otherwise)
        header["queries"] = queries
    tables = {name: digest for name, table in sorted(state.tables.items())
              if (digest := table.digest(quantum)) is not None}
    if tables:  # absent until a layer adapter keeps state: older hashes stay valid
        header["tables"] = tables
    h = hashlib.sha256(canonical_json(header, quantum))
    for am in state.store:
        total = refresh_digest(am, quantum)
        prev_sum, cur_sum, prev_n, cur_n = state.vocabulary(am.agent_id).digest()
        agent = hashlib.sha256(am.agent_id.encode("utf-8", "surrogatepass"))
        agent.update(_AGENT.pack(am.next_key, total.to_bytes(16, "big"), prev_sum, cur_sum,
                                 prev_n, cur_n))
        h.update(agent.digest())
    return h.hexdigest()
