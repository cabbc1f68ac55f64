"""The incremental state hash: its cost follows changes, not size, and it splits by agent.

``state_hash = sha256(canonical JSON of the header and of the per-agent sums)`` where

- the header holds what the whole engine shares: the config fingerprint, clock, pressure,
  the embedder version and (async embedding mode) the query table's digest;
- ``agents`` is the count and the sum (mod 2**256) of one digest per agent of the store: sha256
  of its id, id counter, novelty-vocabulary digest and the sum (mod 2**128) of its records'
  16-byte digests. A record's digest covers every stored field (quantized importance, times,
  layer, flags, status, text, tags, sparse metadata); it is computed lazily, once per change
  of the record (``store.digests.refresh_digest``);
- ``tables`` gives, per layer-adapter state table (``core.tables``), its agent rows' count
  and digest sum (each row's digest covers its key, which starts with the owning agent);
- ``tasks`` is the count and sum of one digest per agent the summarizer holds state for
  (its task counter, next check and its tasks in each queue, in queue order).

Every part is a sum over agents, so the hash does not depend on how agents were inserted
(the same in any process and after save/load) **nor on how they are split**: engines that
each hold some of the agents (the shards of ``f09_memory.distributed``) return their
:class:`HashParts`, :func:`merge_parts` adds them, and :func:`combine_parts` gives the hash
the one engine holding every agent would give. What only schedules work (the tick cursor,
the compaction cursor, the backlog streak, the procedural miner's next agent: rows keyed
``""``) is saved and restored with snapshots but left out of the hash: it says where
maintenance resumes, which depends on the split, not what the engine holds.
"""

from __future__ import annotations

import hashlib
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from f09_memory.canonical import canonical_json, sha256_hex
from f09_memory.config.config import MemoryConfig
from f09_memory.core.state import EngineState
from f09_memory.store.digests import refresh_digest

__all__ = ["HashParts", "combine_parts", "config_fingerprint", "hash_parts", "merge_parts",
           "state_hash"]

_AGENT = struct.Struct("<q16sQQqq")
_MASK128 = (1 << 128) - 1
_MASK256 = (1 << 256) - 1
_QUEUES = ("pending", "ready", "held", "late")


@dataclass(frozen=True, slots=True)
class HashParts:
    """The additive parts of a state hash (see the module docstring).

    Attributes:
        header: What the whole engine shares (config fingerprint, clock, pressure, ...).
        agents: How many agents the store holds.
        agent_sum: The sum of their digests, mod 2**256.
        tables: Per state table: its agent rows and the sum of their digests (mod 2**128);
            a table without agent rows is left out.
        tasks: How many agents the summarizer holds state for.
        task_sum: The sum of their summarizer digests, mod 2**128.
    """

    header: dict[str, Any]
    agents: int = 0
    agent_sum: int = 0
    tables: dict[str, tuple[int, int]] = field(default_factory=dict)
    tasks: int = 0
    task_sum: int = 0


def config_fingerprint(config: MemoryConfig) -> str:
    """sha256 of the config's canonical JSON: different settings, different state hash."""
    return sha256_hex(config.to_json_dict())


def _task_agent(entry: Mapping[str, Any]) -> str:
    task = entry.get("task", entry)
    return str(task["agentId"])


def summarizer_digests(summarizer_state: Mapping[str, Any], quantum: int) -> tuple[int, int]:
    """``(agents, digest sum mod 2**128)`` of the summarizer's state, split by agent.

    Each agent's digest is sha256 of the canonical JSON of its task counter, next check and
    its entries of each queue in queue order: the same whichever other agents share the
    summarizer.
    """
    per_agent: dict[str, dict[str, Any]] = {}

    def of(agent: str) -> dict[str, Any]:
        got = per_agent.get(agent)
        if got is None:
            got = per_agent[agent] = {"agent": agent}
        return got

    for agent, n in summarizer_state.get("counters", {}).items():
        of(agent)["counter"] = n
    for agent, t in summarizer_state.get("nextCheck", {}).items():
        of(agent)["nextCheck"] = t
    for queue in _QUEUES:
        for entry in summarizer_state.get(queue, ()):
            of(_task_agent(entry)).setdefault(queue, []).append(entry)
    total = 0
    for data in per_agent.values():
        digest = hashlib.sha256(canonical_json(data, quantum)).digest()
        total += int.from_bytes(digest[:16], "big")
    return len(per_agent), total & _MASK128


def hash_parts(state: EngineState, fingerprint: str, summarizer_state: dict[str, Any],
               embedder_version: str | None, queries: str | None = None) -> HashParts:
    """The additive parts of the state hash of ``state`` (see the module docstring).

    Runtime complexity: O(agents) plus O(records and table rows changed since the last
    call).
    """
    quantum = state.config.score_quantum
    header: dict[str, Any] = {
        "config": fingerprint,
        "clock": state.clock,
        "pressure": state.pressure.value,
        "embedder": embedder_version,
    }
    if queries is not None:  # async embedding mode's query table (absent otherwise)
        header["queries"] = queries
    tables: dict[str, tuple[int, int]] = {}
    for name, table in sorted(state.tables.items()):
        rows, total = table.agent_digest(quantum)
        if rows:
            tables[name] = (rows, total)
    agent_sum = 0
    n = 0
    for am in state.store:
        records = refresh_digest(am, quantum)
        prev_sum, cur_sum, prev_n, cur_n = state.vocabulary(am.agent_id).digest()
        agent = hashlib.sha256(am.agent_id.encode("utf-8", "surrogatepass"))
        agent.update(_AGENT.pack(am.next_key, records.to_bytes(16, "big"), prev_sum, cur_sum,
                                 prev_n, cur_n))
        agent_sum += int.from_bytes(agent.digest(), "big")
        n += 1
    tasks, task_sum = summarizer_digests(summarizer_state, quantum)
    return HashParts(header, n, agent_sum & _MASK256, tables, tasks, task_sum)


def merge_parts(parts: Iterable[HashParts]) -> HashParts:
    """Add the parts of engines holding disjoint sets of agents (the shards of one engine).

    Raises:
        ValueError: No parts, or their headers differ (the engines do not share a config,
            clock, pressure or embedder).
    """
    items = list(parts)
    if not items:
        raise ValueError("no hash parts to merge")
    header = items[0].header
    tables: dict[str, tuple[int, int]] = {}
    agents = agent_sum = tasks = task_sum = 0
    for p in items:
        if p.header != header:
            raise ValueError("the engines' shared state differs: "
                             f"{sorted(k for k in header if header[k] != p.header.get(k))}")
        agents += p.agents
        agent_sum += p.agent_sum
        tasks += p.tasks
        task_sum += p.task_sum
        for name, (rows, total) in p.tables.items():
            have = tables.get(name, (0, 0))
            tables[name] = (have[0] + rows, (have[1] + total) & _MASK128)
    return HashParts(header, agents, agent_sum & _MASK256, dict(sorted(tables.items())),
                     tasks, task_sum & _MASK128)


def combine_parts(parts: HashParts) -> str:
    """The sha256 hex state hash of (merged) parts."""
    body: dict[str, Any] = dict(parts.header)
    body["agents"] = f"{parts.agents}:{parts.agent_sum:064x}"
    if parts.tables:
        body["tables"] = {name: f"{rows}:{total:032x}"
                          for name, (rows, total) in sorted(parts.tables.items())}
    if parts.tasks:
        body["tasks"] = f"{parts.tasks}:{parts.task_sum:032x}"
    return hashlib.sha256(canonical_json(body)).hexdigest()


def state_hash(state: EngineState, fingerprint: str, summarizer_state: dict[str, Any],
               embedder_version: str | None, queries: str | None = None) -> str:
    """sha256 hex of the whole state (see the module docstring).

    Runtime complexity: O(agents) plus O(records changed since the last call).
    """
    return combine_parts(hash_parts(state, fingerprint, summarizer_state, embedder_version,
                                    queries))
