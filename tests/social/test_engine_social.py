"""The social layer through the engine: notable records, events, hearsay, opinions."""

from __future__ import annotations

from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.bus import SocialChanged
from f09_memory.errors import CapacityExceededError, InputInvalidError
from f09_memory.schema.records import RecordMetadata
from f09_memory.social import Opinion
from f09_memory.social.service import record_metadata


def engine(**social: Any) -> MemoryEngine:
    return MemoryEngine(MemoryConfig(social=social))


def changes(events: list[SocialChanged]) -> list[tuple[str, str, str]]:
    return [(e.agent_id, e.other_agent_id, e.change) for e in events]


def test_first_meeting_trust_flip_and_betrayal_make_records_and_events() -> None:
    mem = engine()
    seen: list[Any] = []
    mem.bus.subscribe("memory:social:changed", seen.append)
    first = mem.interact("bob", "ann", 0.9, now=1)
    assert changes(first) == [("bob", "ann", "first-meeting")]
    assert first[0].record_id is not None and mem.get(first[0].record_id).layer.value == "social"
    for t in range(2, 20):
        mem.interact("bob", "ann", 0.9, now=t)
    assert mem.opinion("bob", "ann").trust >= 0.5
    hurt = mem.interact("bob", "ann", -1.0, kind="betrayal", now=30)
    assert [c.change for c in hurt] == ["betrayal"]
    assert mem.opinion("bob", "ann").betrayals == 1
    flipped = mem.interact_many([("bob", "ann", -1.0, 31, "betrayal")] * 3)
    assert [c.change for c in flipped] == ["trust-flip"]
    lost = mem.get(flipped[0].record_id or "")
    assert lost.content == "Stopped trusting ann." and "trust-lost" in lost.metadata.tags
    assert lost.metadata.social is not None and lost.metadata.social.other_agent_id == "ann"
    assert lost.metadata.social.sentiment == -1.0
    regained = []
    for t in range(40, 80):
        regained += mem.interact("bob", "ann", 1.0, now=t)
    assert [c.change for c in regained] == ["trust-flip"]
    assert "Came to trust ann." == mem.get(regained[0].record_id or "").content
    assert [e.to_dict() for e in seen] == [e.to_dict() for e in
                                         first + hurt + flipped + regained]
    assert set(seen[0].to_dict()) == {"agentId", "otherAgentId", "change", "trust", "recordId"}
    tags = [r.metadata.tags for r in mem.records("bob", "social")]
    assert tags == [("first-meeting",), ("betrayal",), ("trust-flip", "trust-lost"),
                    ("trust-flip", "trust-gained")]
    mem._check()


def test_trust_hovering_at_the_threshold_does_not_flip_every_step() -> None:
    mem = engine(trust_margin=0.05)
    out = mem.interact_many([("bob", "ann", 0.3 if i % 2 else -0.3) for i in range(200)],
                            now=1)
    assert [c.change for c in out] == ["first-meeting"]
    no_margin = engine(trust_margin=0.0)
    out = no_margin.interact_many([("bob", "ann", 0.3 if i % 2 else -0.3)
                                   for i in range(200)], now=1)
    assert len(out) > 50  # without hysteresis each step across zero is a flip


def test_no_betrayal_without_prior_trust_and_records_can_be_turned_off() -> None:
    mem = engine(records=False)
    out = mem.interact_many([("bob", "ann", -1.0, 1, "betrayal")] * 3)
    assert changes(out) == [("bob", "ann", "first-meeting")] and out[0].record_id is None
    assert mem.count() == 0 and mem.opinion("bob", "ann").betrayals == 0


def test_hearsay_is_discounted_by_trust_per_hop_and_keeps_its_chain() -> None:
    mem = engine()
    heard = mem.hear("cid", "ann", source="bob", chain=["dee"], sentiment=-1.0, now=5)
    assert changes(heard) == [("cid", "ann", "hearsay")]
    rec = mem.get(heard[0].record_id or "")
    assert rec.content == "Heard about ann from bob."
    assert rec.metadata.attributes == {"hearsayDepth": 2, "via0": "bob", "via1": "dee"}
    op = mem.opinion("cid", "ann")
    assert (op.count, op.hearsay_count, op.hearsay_share) == (0, 1, 1.0)
    # strangers all along: 0.5 per hop times a trust factor of 1/2 -> 1/16 of the weight
    assert op.sentiment == pytest.approx(-0.3 / 16)
    trusting = engine()
    for t in range(30):
        trusting.interact("cid", "bob", 1.0, now=t)
    trusting.hear("cid", "ann", source="bob", sentiment=-1.0, now=40)
    trust = trusting.opinion("cid", "bob").trust
    assert trusting.opinion("cid", "ann").sentiment == pytest.approx(
        -0.3 * 0.5 * (1 + trust) / 2)
    distrust = engine()
    for t in range(60):
        distrust.interact("cid", "bob", -1.0, now=t)
    distrust.hear("cid", "ann", source="bob", sentiment=-1.0, now=70)
    assert abs(distrust.opinion("cid", "ann").sentiment) < abs(
        trusting.opinion("cid", "ann").sentiment)


def test_a_hearsay_batch_reads_trust_as_changed_by_its_earlier_items() -> None:
    items: list[Any] = [("cid", "bob", 1.0, 1, "gift", 5.0)] * 4 + [
        {"agent_id": "cid", "other_agent_id": "ann", "sentiment": 0.8, "kind": "hearsay",
         "source": "bob"},
        ("cid", "bob", -1.0, 2, "betrayal"),
        {"agent_id": "cid", "other_agent_id": "ann", "sentiment": 0.8, "kind": "hearsay",
         "source": "bob", "chain": ["eve"]},
        ("bob", "eve", 0.9)]
    batch, single = engine(), engine()
    out = batch.interact_many(items, now=3)
    one = [c for item in items for c in single.interact_many([item], now=3)]
    assert batch.state_hash() == single.state_hash() and changes(out) == changes(one)
    batch._check()


def test_opinion_of_a_stranger_is_neutral_and_bad_ids_raise() -> None:
    mem = engine()
    assert mem.opinion("bob", "ann") == Opinion("bob", "ann")
    assert mem.opinion("bob", "ann").first_at is None
    for args in [("bob", "bob"), ("", "ann"), ("bob", 5)]:
        with pytest.raises(InputInvalidError):
            mem.opinion(*args)  # type: ignore[arg-type]


def test_acquaintances_order_by_trust_count_or_recency_then_id() -> None:
    mem = engine()
    mem.interact_many([("bob", "ann", 0.9, 1), ("bob", "cid", 0.9, 1), ("bob", "dee", -0.5, 9),
                       ("bob", "eve", 0.2, 5), ("bob", "eve", 0.2, 6), ("ann", "bob", 1.0, 2)])
    mem.hear("bob", "zed", source="ann", sentiment=1.0, now=10)
    assert [o.other_agent_id for o in mem.acquaintances("bob", 10)] == [
        "ann", "cid", "eve", "dee"]
    assert [o.other_agent_id for o in mem.acquaintances("bob", 2, by="count")] == [
        "eve", "ann"]
    assert [o.other_agent_id for o in mem.acquaintances("bob", 2, by="recent")] == [
        "dee", "eve"]
    assert [o.other_agent_id for o in mem.acquaintances("bob", 1, by="recent",
                                                        include_hearsay=True)] == ["zed"]
    assert mem.acquaintances("bob", 0) == [] and mem.acquaintances("nobody", 3) == []
    for kwargs in [{"k": -1}, {"k": True}, {"k": 2, "by": "fame"},
                   {"k": 2, "include_hearsay": 1}]:
        with pytest.raises(InputInvalidError):
            mem.acquaintances("bob", **kwargs)  # type: ignore[arg-type]


def test_records_past_the_ceiling_raise_and_leave_the_ledger_unchanged() -> None:
    mem = MemoryEngine(MemoryConfig(max_records_per_agent=2))
    mem.interact_many([("bob", "ann", 0.5), ("bob", "cid", 0.5)], now=1)
    before = mem.state_hash()
    with pytest.raises(CapacityExceededError):
        mem.interact_many([("bob", "ann", 0.5), ("bob", "dee", 0.5)], now=2)
    assert mem.state_hash() == before
    assert mem.opinion("bob", "ann").count == 1 and mem.opinion("bob", "dee").count == 0
    mem._check()
    mem.interact("bob", "ann", 0.5, now=3)  # not notable: no record needed
    assert mem.opinion("bob", "ann").count == 2
    # records at several times: every agent is checked before the first is stored
    with pytest.raises(CapacityExceededError):
        mem.interact_many([("eve", "ann", 0.5, 4), ("bob", "eve", 0.5, 5)])
    assert mem.count("eve") == 0 and mem.opinion("eve", "ann").count == 0
    mem._check()


def test_records_are_redacted_and_capped_like_any_social_record() -> None:
    mem = MemoryEngine(MemoryConfig(retention_policy={"social_max": 3},
                                    hard_cap_slack=0.0))
    mem.interact_many([("bob", f"npc-{i}", 0.5) for i in range(6)], now=1)
    assert mem.count("bob", "social") <= 4
    assert mem.opinion("bob", "npc-0").count == 1  # the ledger keeps every relationship


def test_record_metadata_equals_the_validated_model() -> None:
    attributes: dict[str, Any] = {"hearsayDepth": 2, "via0": "bob", "via1": "dee"}
    built = record_metadata("ann", -0.5, attributes)
    assert built == RecordMetadata.model_validate(
        {"social": {"otherAgentId": "ann", "sentiment": -0.5}, "attributes": attributes})
    assert built.to_json_dict() == RecordMetadata.model_validate(built.model_dump()).to_json_dict()
