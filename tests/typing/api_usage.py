"""Public-API calls that must type-check under mypy --strict (run by CI, not by pytest)."""

from __future__ import annotations

from collections.abc import Sequence

from f09_memory import (
    EmbeddingProvider,
    ErrorCode,
    MemoryConfig,
    MemoryEngine,
    MemoryEngineError,
    MemoryRecord,
    Procedure,
    RetrievalRequest,
    RetrievedBundle,
    TickReport,
    bundle_hash,
)
from f09_memory.bus import RecordCreated
from f09_memory.embedding import OpenAICompatibleEmbedder

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
report: TickReport = engine.tick(3_000, budget_ms=2.0)
mined: int = report.mined + report.backlog.actions_unmined
procedures: list[Procedure] = engine.procedures("npc-1", context="hungry", k=3)
works: tuple[str, ...] = procedures[0].actions if procedures else ()
engine.set_pressure("throttle")
digest: str = engine.state_hash() + bundle_hash(bundle)
engine.bind_thread()  # hand the engine to the calling thread


def on_created(event: RecordCreated) -> None:
    print(event.id, event.importance)


unsubscribe = engine.bus.subscribe("memory:record:created", on_created)
unsubscribe()
try:
    engine.get("npc-1:0000009999")
except MemoryEngineError as exc:
    code: ErrorCode = exc.code

remote = OpenAICompatibleEmbedder("http://localhost:11434", "nomic-embed-text", dim=768,
                                  max_retries=2, timeout_s=5.0)
provider: EmbeddingProvider = remote
remote_engine = MemoryEngine(MemoryConfig(), embedder=provider)
remote.close()

keyed = MemoryConfig(redaction_key="a-random-key-of-16+-chars")
restored: MemoryConfig = MemoryConfig.parse(keyed.to_json_dict()).with_redaction_key(
    "a-random-key-of-16+-chars")
loaded: MemoryEngine = MemoryEngine.load("snap.f09", redaction_key="a-random-key-of-16+-chars")
