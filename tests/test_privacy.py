"""Redacted data never appears in stored records, events, logs or hashes' inputs."""

from __future__ import annotations

import json
import logging

import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest
from f09_memory.testing import capture_events

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
    assert ("EMAIL", "UUID", "NUMSEQ16") == log.of("memory:record:redacted")[0].patterns
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
