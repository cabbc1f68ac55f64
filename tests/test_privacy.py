"""Redacted data never appears in stored records, events, logs or hashes' inputs."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import numpy as np
import pytest
from numpy.typing import NDArray

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.testing import FakeEmbedder, capture_events

EMAIL = "mara.the.smith@forge.example.com"
UUID = "9f1c2d3e-4b5a-4c6d-8e7f-0a1b2c3d4e5f"
CARD = "4539 1488 0343 6467"
SECRETS = [EMAIL, UUID, CARD, CARD.replace(" ", "")]


def test_secrets_never_reach_records_events_logs_or_state(caplog: pytest.LogCaptureFixture) -> None:
    engine = MemoryEngine(MemoryConfig())
    engine.set_pressure("throttle")
    with caplog.at_level(logging.DEBUG, logger="f09_memory"), \
            capture_events(engine.bus) as log:
        rec = engine.ingest(
            "npc", f"Mara wrote from {EMAIL}. Her order {UUID} was paid with {CARD}.",
            tags=[f"contact:{EMAIL}"], source_event=f"mail from {EMAIL}",
            metadata={"attributes": {"account": CARD, "count": 3}}, now=0)
        engine.ingest_many("npc", [{"content": f"Again {EMAIL}", "tags": [UUID]}], now=1)
        bundle = engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog",
                                                  max_tokens=500), now=2)
        engine.tick(5)
    stored = json.dumps([r.to_json_dict() for r in engine.records("npc")])
    events = json.dumps([e.to_dict() for e in log.events])
    snapshot = engine._snapshot_bytes()
    returned = json.dumps(bundle.to_json_dict())
    for secret in SECRETS:
        for where, text in [("stored", stored), ("events", events), ("logs", caplog.text),
                            ("bundle", returned)]:
            assert secret not in text, f"{secret} leaked into {where}"
        assert secret.encode() not in snapshot, f"{secret} leaked into the snapshot"
    assert rec.redacted
    assert "<REDACT:sha256-" in rec.content and "<REDACT:sha256-" in rec.metadata.tags[0]
    assert 3 == rec.metadata.attributes["count"]
    assert ("EMAIL", "UUID", "CARD") == log.of("memory:record:redacted")[0].patterns
    assert "[MEM][REDACT]" in caplog.text and "[MEM][CREATE]" in caplog.text
    assert engine.redactor_counts["EMAIL"] >= 4


def test_redaction_mode_off_stores_raw_text() -> None:
    engine = MemoryEngine(MemoryConfig(redaction_mode=False))
    rec = engine.ingest("npc", f"mail {EMAIL}", now=0)
    assert EMAIL in rec.content and not rec.redacted


def test_custom_pattern_from_config_is_applied() -> None:
    engine = MemoryEngine(MemoryConfig(redact_patterns=("EMAIL", r"guild-pass-\d+")))
    rec = engine.ingest("npc", "the word is guild-pass-4471", now=0)
    assert "guild-pass-4471" not in rec.content


class _RecordingEmbedder(FakeEmbedder):
    """Keeps every text it was asked to embed (what a remote embedder would receive)."""

    def __init__(self) -> None:
        super().__init__(dim=16)
        self.seen: list[str] = []

    def embed(self, texts: Sequence[str]) -> NDArray[np.float32]:
        self.seen.extend(texts)
        return super().embed(texts)


@pytest.mark.parametrize("many", [False, True])
def test_query_texts_are_redacted_before_they_reach_the_embedder(many: bool) -> None:
    embedder = _RecordingEmbedder()
    engine = MemoryEngine(MemoryConfig(), embedder=embedder)
    rec = engine.ingest("npc", f"Mara wrote from {EMAIL}", now=0)
    request = RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=500,
                               strategy="semantic", query=f"who is {EMAIL}, card {CARD}?")
    bundle = engine.retrieve_many([request], now=1)[0] if many else engine.retrieve(request,
                                                                                     now=1)
    for secret in SECRETS:
        assert all(secret not in text for text in embedder.seen), secret
    assert 2 == len(embedder.seen) and "<REDACT:sha256-" in embedder.seen[1]
    assert [rec.id] == [r.id for r in bundle.records]


def test_query_texts_reach_the_embedder_as_given_when_redaction_is_off() -> None:
    embedder = _RecordingEmbedder()
    engine = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=embedder)
    engine.ingest("npc", "a letter", now=0)
    engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=500,
                                     query=f"from {EMAIL}"), now=1)
    assert f"from {EMAIL}" == embedder.seen[-1]
