"""Scale-out on Ray: the engine's API over N actors, each owning one ``MemoryEngine`` shard.

Optional extra ``[ray]`` (``pip install 'f09-memory[ray]'``); nothing here imports Ray until
a :class:`ShardedMemoryEngine` is built. Parts:

- ``routing``: which shard owns an agent (``shard_of``: jump hash of ``blake2b(agent_id)``);
- ``actor``: ``ShardActor`` (the Ray actor's class), ``ShardEngine`` (a ``MemoryEngine``
  numbering the writes it applies, for exactly-once retries after a crash), ``AppliedOps``;
- ``engine``: ``ShardedMemoryEngine`` (the driver; ``frame`` sends a host's whole frame in
  one call per shard), built from ``calls`` (``ShardCalls``: one remote call per shard,
  in parallel, retries and resends after a restart), ``grouping`` (``Grouper``: crowd calls
  split by shard, answers put back in order), ``wire`` (what a crowd call carries each
  way), ``shadow`` (``DriverShadow``: clock, pressure, the position mirror, checks made
  before any shard is touched) and ``forward`` (``AgentCalls``: the calls one agent's
  shard answers);
- ``manifest``: the saved folder (``write_saved``, ``read_saved``) and durable layout;
- ``events``: the shards' bus events merged in one deterministic order;
- ``bundles``: ``ShardedBundles``, a frame's bundles decoded when read; ``codec``: the
  compact encoding they travel in (``encode_bundle`` / ``decode_bundle``);
- ``reshard``: ``merge_snapshots``, the snapshot of the agents one shard owns, cut from any
  set of snapshots (load onto another shard count).

The state hash is the single-process engine's for any shard count (``core.digest`` adds the
shards' per-agent parts); see ``docs/distributed.md`` for the cluster plan.
"""

from f09_memory.distributed.actor import AppliedOps, ShardActor, ShardEngine, ShardSpec
from f09_memory.distributed.bundles import ShardedBundles
from f09_memory.distributed.codec import RecordMemo, decode_bundle, encode_bundle
from f09_memory.distributed.engine import ShardedMemoryEngine, ShardFrame
from f09_memory.distributed.events import event_agent, merge_events, merge_tick_reports
from f09_memory.distributed.manifest import MANIFEST_NAME
from f09_memory.distributed.reshard import OPS_TABLE, merge_snapshots
from f09_memory.distributed.routing import ShardRouter, record_agent, shard_of, task_agent

__all__ = [
    "MANIFEST_NAME",
    "OPS_TABLE",
    "AppliedOps",
    "RecordMemo",
    "ShardActor",
    "ShardEngine",
    "ShardFrame",
    "ShardRouter",
    "ShardSpec",
    "ShardedBundles",
    "ShardedMemoryEngine",
    "decode_bundle",
    "encode_bundle",
    "event_agent",
    "merge_events",
    "merge_snapshots",
    "merge_tick_reports",
    "record_agent",
    "shard_of",
    "task_agent",
]
