"""Claims: reinforcement, trust-gated supersession, quarantine, scopes, persistence."""

from __future__ import annotations

from pathlib import Path

import pytest

from f09_memory import MemoryEngine, RetrievalRequest
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion import Claim


def budget(engine: MemoryEngine, statuses: tuple[str, ...] | None = None) -> list[str]:
    request = RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=500,
                               statuses=statuses)  # type: ignore[arg-type]
    return [r.content for r in engine.retrieve(request).records]


def test_a_newer_trusted_claim_supersedes_and_the_old_one_is_kept_but_hidden() -> None:
    engine = MemoryEngine(embedder=None)
    first = engine.ingest_claim("a", "The budget is 500 gold.",
                                Claim("project:castle", "budget_is", "500 gold"), now=0)
    second = engine.ingest_claim("a", "The budget is now 800 gold.",
                                 Claim("project:castle", "budget_is", "800 gold"), now=5)
    assert ("created", "superseded", first.record.id) == (
        first.action, second.action, second.previous_id)
    assert ["The budget is now 800 gold."] == budget(engine)
    old = engine.get(first.record.id)
    assert "superseded" == old.metadata.attributes["claimStatus"]
    assert second.record.id == old.metadata.attributes["supersededBy"]
    assert 2 == len(budget(engine, ("active", "superseded")))
    engine._check()


def test_a_repeated_claim_reinforces_instead_of_duplicating() -> None:
    engine = MemoryEngine(embedder=None)
    one = engine.ingest_claim("a", "User prefers tea.", Claim("user", "prefers", "Tea"),
                              importance=0.5, now=0)
    two = engine.ingest_claim("a", "The user likes tea.", Claim("user", "prefers", " tea "),
                              now=1)
    assert ("reinforced", one.record.id) == (two.action, two.record.id)
    assert 1 == engine.count("a")
    assert 0.55 == engine.get(one.record.id).importance
    assert 1 == engine.get(one.record.id).metadata.attributes["claimReinforced"]


def test_a_less_trusted_conflict_is_quarantined() -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_claim("a", "Deadline is Friday.", Claim("project:x", "deadline_is", "friday"),
                        now=0)
    out = engine.ingest_claim("a", "A web page says the deadline is Monday.",
                              Claim("project:x", "deadline_is", "monday",
                                    provenance="tool_output"), now=1)
    assert "quarantined" == out.action
    assert ["Deadline is Friday."] == budget(engine)
    assert "A web page says the deadline is Monday." in budget(engine, ("quarantined",))


def test_session_scope_does_not_supersede_the_global_preference() -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_claim("a", "Prefers the aisle seat.", Claim("user", "prefers", "aisle"),
                        now=0)
    out = engine.ingest_claim("a", "This time, a window seat.",
                              Claim("user", "prefers", "window", scope="session",
                                    session_id="s-7"), now=1)
    assert "created" == out.action
    assert 2 == len(budget(engine))


def test_temporal_claims_expire_at_valid_to() -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_claim("a", "The bridge is closed until noon.",
                        Claim("world", "bridge_is", "closed", scope="temporal", valid_to=100),
                        now=0)
    assert 1 == len(budget(engine))
    engine.tick(100)
    assert [] == budget(engine)


@pytest.mark.parametrize("make", [
    lambda: Claim("", "p", "v"),
    lambda: Claim("s", "p", "v", scope="forever"),  # type: ignore[arg-type]
    lambda: Claim("s", "p", "v", provenance="rumour"),  # type: ignore[arg-type]
    lambda: Claim("s", "p", "v", scope="session"),
    lambda: Claim("s", "p", "v", scope="temporal"),
])
def test_bad_claims_are_rejected(make) -> None:
    with pytest.raises(MemoryEngineError) as info:
        make()
    assert ErrorCode.MEMORY_INPUT_INVALID == info.value.code


def test_bad_ingest_claim_arguments_leave_the_state_unchanged() -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest("a", "x", now=5)
    before = engine.state_hash()
    for call in (lambda: engine.ingest_claim("a", "", Claim("s", "p", "v"), now=5),
                 lambda: engine.ingest_claim("a", "c", "not a claim", now=5),  # type: ignore[arg-type]
                 lambda: engine.ingest_claim("a", "c", Claim("s", "p", "v", scope="temporal",
                                                             valid_to=5), now=5)):
        with pytest.raises(MemoryEngineError):
            call()
    assert before == engine.state_hash()


def test_claim_status_survives_save_and_load(tmp_path: Path) -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest_claim("a", "Budget 1.", Claim("p", "budget_is", "1"), now=0)
    engine.ingest_claim("a", "Budget 2.", Claim("p", "budget_is", "2"), now=1)
    loaded = MemoryEngine.load(engine.save(tmp_path / "c.f09"), embedder=None)
    assert engine.state_hash() == loaded.state_hash()
    assert ["Budget 2."] == budget(loaded)
    third = loaded.ingest_claim("a", "Budget 3.", Claim("p", "budget_is", "3"), now=2)
    assert "superseded" == third.action
    loaded._check()
