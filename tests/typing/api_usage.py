"""Public-API calls that must type-check under mypy --strict (run by CI, not by pytest)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from functools import partial

import numpy as np
from numpy.typing import NDArray

from f09_memory import (
    AgentMetrics,
    CandidateExplanation,
    EmbeddingProvider,
    EngineStats,
    ErrorCode,
    Explanation,
    Interaction,
    Introspector,
    JsonValue,
    MemoryConfig,
    MemoryDiff,
    MemoryEngine,
    MemoryEngineError,
    MemoryRecord,
    MemorySnapshot,
    MetricsCollector,
    MetricsSnapshot,
    NearbyRecords,
    Opinion,
    PhysicsEvent,
    Procedure,
    RecordView,
    RetrievalRequest,
    RetrievedBundle,
    RetrievedBundles,
    SocialChanged,
    TickPoint,
    TickReport,
    attach_log_tags,
    bundle_hash,
    render_prometheus,
)
from f09_memory.bus import RecordCreated
from f09_memory.embedding import HashingEmbedder, OpenAICompatibleEmbedder, ProcessEmbedder
from f09_memory.introspection import ExclusionReason
from f09_memory.tools import tool_definitions

engine = MemoryEngine(MemoryConfig(episodic_max=100), seed=0)
rec: MemoryRecord = engine.ingest("npc-1", "Saw the smith", importance=0.4, tags=["town"],
                                  now=1_000)
recs: Sequence[MemoryRecord] = engine.ingest_many("npc-1", [{"content": "x"}, "y"], now=1_000)
ids: list[str] = engine.ingest_many("npc-2", ["z"], now=1_000).ids
bundle: RetrievedBundle = engine.retrieve(
    RetrievalRequest(agent_id="npc-1", purpose="dialog", max_tokens=400), now=2_000)
bundles: list[RetrievedBundle] = engine.retrieve_many([{"agentId": "npc-1",
                                                        "purpose": "dialog",
                                                        "maxTokens": 10}])
hashed: RetrievedBundles = engine.retrieve_many(
    [RetrievalRequest(agent_id="npc-1", purpose="dialog", max_tokens=400)], now=2_000,
    hashes=True)
frame_hashes: list[str] | None = hashed.hashes
report: TickReport = engine.tick(3_000, budget_ms=2.0)
mined: int = report.mined + report.backlog.actions_unmined
procedures: list[Procedure] = engine.procedures("npc-1", context="hungry", k=3)
works: tuple[str, ...] = procedures[0].actions if procedures else ()
engine.set_pressure("throttle")
near: NearbyRecords = engine.nearby("npc-1", (0.0, 0.0), radius=5.0, k=3, layer="spatial")
for hit in near:
    place: MemoryRecord = hit.record
    metres: float = hit.distance
placed: RetrievedBundle = engine.retrieve({"agent_id": "npc-1", "purpose": "navigation",
                                           "limit": 5, "position": [1.0, 2.0]})
touched: Sequence[MemoryRecord] = engine.ingest_physics(
    [PhysicsEvent(kind="collision", agent_id="npc-1", position=(1.0, 2.0),
                  contact_class="fire"),
     {"kind": "boundary", "agent_id": "npc-1", "position": [0, 0], "to_region": "town"}],
    now=3_000)
digest: str = engine.state_hash() + bundle_hash(bundle)
engine.bind_thread()  # hand the engine to the calling thread
social: list[SocialChanged] = engine.interact("npc-1", "npc-2", 0.5, kind="gift", now=3_000)
social += engine.interact_many([("npc-1", "npc-2", -0.2), Interaction("npc-2", "npc-1", 0.1),
                                {"agentId": "npc-3", "otherAgentId": "npc-1", "sentiment": 0.3,
                                 "kind": "hearsay", "source": "npc-2"}], now=3_000)
social += engine.hear("npc-3", "npc-4", source="npc-1", chain=["npc-2"], sentiment=-0.5)
view: Opinion = engine.opinion("npc-1", "npc-2")
friends: list[Opinion] = engine.acquaintances("npc-1", 5, by="recent")


def on_created(event: RecordCreated) -> None:
    print(event.id, event.importance)


unsubscribe = engine.bus.subscribe("memory:record:created", on_created)
unsubscribe()
try:
    engine.get("npc-1:0000009999")
except MemoryEngineError as exc:
    code: ErrorCode = exc.code
    field: JsonValue = exc.details.get("field")
    payload: dict[str, JsonValue] = exc.to_dict()
    if isinstance(field, str):
        print(field.upper(), payload["code"])

remote = OpenAICompatibleEmbedder("http://localhost:11434", "nomic-embed-text", dim=768,
                                  max_retries=2, timeout_s=5.0)
provider: EmbeddingProvider = remote
remote_engine = MemoryEngine(MemoryConfig(), embedder=provider)
remote.close()

with ProcessEmbedder(partial(HashingEmbedder, 64), threads=1, timeout_s=5.0) as child:
    child_provider: EmbeddingProvider = child
    child_rows: NDArray[np.float32] = child.embed(["a text"])

keyed = MemoryConfig(redaction_key="a-random-key-of-16+-chars")
restored: MemoryConfig = MemoryConfig.parse(keyed.to_json_dict()).with_redaction_key(
    "a-random-key-of-16+-chars")
loaded: MemoryEngine = MemoryEngine.load("snap.f09", redaction_key="a-random-key-of-16+-chars")
form: dict[str, JsonValue] = rec.to_json_dict()
agent = form["agentId"]
assert isinstance(agent, str) and agent.startswith("npc")
responses_tools = tool_definitions("openai_responses", strict=True)
gemini_tools = tool_definitions("gemini", config=engine.config)

metrics = MetricsCollector(engine, reservoir_size=256, seed=1, history=100)
snap: MetricsSnapshot = metrics.snapshot()
agg: AgentMetrics = snap.aggregate
slowest: float = max(m.p95_retrieval_ms for m in snap.agents.values())
points: list[TickPoint] = metrics.series()
detach: Callable[[], None] = attach_log_tags(engine, level=logging.DEBUG)
body, content_type = render_prometheus(metrics)
exposition: bytes = render_prometheus(snap)[0] + body
by_layer: dict[str, dict[str, int]] = engine.layer_counts()
metrics.close()

intro: Introspector = engine.introspection
page: MemorySnapshot = intro.snapshot("npc-1", layer="episodic", limit=50, offset=0)
changes: MemoryDiff = intro.diff(page.version, "npc-1", redact=False)
why: Explanation = intro.explain({"agentId": "npc-1", "purpose": "dialog", "maxTokens": 400},
                                 now=3_000)
first: CandidateExplanation = why.candidates[0]
reason: ExclusionReason | None = first.excluded
counts: EngineStats = intro.stats()
one: RecordView = intro.record_view(page.records[0].id, redact=True)
version: int = intro.version + counts.version + len(changes.added) + len(why.bundle_ids)
blob: bytes = loaded.dumps()
from_bytes: MemoryEngine = MemoryEngine.loads(blob, redaction_key="a-random-key-of-16+-chars")
