"""The physics adapter: which events become spatial items, first contacts, bad events."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from f09_memory import InputInvalidError, PhysicsEvent
from f09_memory.config.spatial import SpatialSettings
from f09_memory.errors import ConfigInvalidError
from f09_memory.spatial.physics import ContactTable, parse_events, physics_items

CROSS = {"kind": "movement", "agent_id": "a", "position": [1, 2], "from_region": "forest",
         "to_region": "market"}
WALK = {"kind": "movement", "agent_id": "a", "position": [1, 2, 3], "region": "forest"}
FIRE = {"kind": "collision", "agent_id": "a", "position": [4, 4], "contact_class": "fire",
        "other_id": "torch-1"}
GATE = {"kind": "boundary", "agent_id": "b", "position": [0, 0], "toRegion": "town"}


def plan(events: list[dict[str, Any]], seen: frozenset[tuple[str, str]] = frozenset(),
         **flags: Any) -> tuple[list[dict[str, Any]], list[tuple[str, str]]]:
    out = physics_items(parse_events(events), SpatialSettings(**flags), seen.__contains__)
    return out.items, out.contacts


def test_defaults_store_crossings_and_first_contacts_only() -> None:
    items, contacts = plan([CROSS, WALK, FIRE, FIRE, GATE])
    assert [i["content"] for i in items] == [
        "Crossed from forest into market.", "Touched fire for the first time.", "Entered town."]
    assert contacts == [("a", "fire"), ("a", "fire")]
    first = items[0]
    assert first["layer"] == "spatial" and first["source_event"] == "physics:movement"
    assert first["metadata"]["spatial"] == {"x": 1.0, "y": 2.0, "z": 0.0, "region": "market"}
    assert first["metadata"]["attributes"] == {"physicsKind": "movement",
                                               "fromRegion": "forest", "toRegion": "market"}
    assert items[1]["tags"] == ["physics", "first-contact"]
    assert items[1]["metadata"]["attributes"]["otherId"] == "torch-1"
    assert items[1]["importance"] == SpatialSettings().first_contact_importance


def test_a_contact_seen_before_is_not_new() -> None:
    items, contacts = plan([FIRE], seen=frozenset({("a", "fire")}))
    assert items == [] and contacts == [("a", "fire")]
    other_agent = dict(FIRE, agent_id="b")
    items, _ = plan([other_agent], seen=frozenset({("a", "fire")}))
    assert len(items) == 1


def test_flags_choose_what_is_stored() -> None:
    items, _ = plan([CROSS, WALK, FIRE, FIRE], ingest_boundary_crossings=False,
                    ingest_first_contact=False, ingest_every_collision=True,
                    ingest_movement=True)
    assert [i["content"] for i in items] == ["Moved within forest.", "Collided with fire.",
                                             "Collided with fire."]
    items, _ = plan([dict(WALK, region=None, importance=0.9)], ingest_movement=True)
    assert items[0]["content"] == "Moved to (1, 2, 3)." and items[0]["importance"] == 0.9
    assert plan([CROSS, WALK, FIRE], ingest_boundary_crossings=False,
                ingest_first_contact=False)[0] == []


def test_a_movement_within_one_region_is_no_crossing() -> None:
    same = dict(CROSS, to_region="forest")
    assert not PhysicsEvent.parse(same).crosses
    assert plan([same])[0] == []


def test_contact_classes_are_redacted_before_they_key_the_table() -> None:
    out = physics_items(parse_events([FIRE]), SpatialSettings(), lambda key: False,
                        redact=lambda text: "<cls>")
    assert out.contacts == [("a", "<cls>")]


@pytest.mark.parametrize(("event", "field"), [
    ({"kind": "collision", "agent_id": "a", "position": [0, 0]}, "contact_class"),
    ({"kind": "boundary", "agent_id": "a", "position": [0, 0]}, "to_region"),
    (dict(FIRE, position=[0.0]), "position"),
    (dict(FIRE, position=[0, 0, 0, 0]), "position"),
    (dict(FIRE, position=[float("nan"), 0]), "position"),
    (dict(FIRE, kind="teleport"), "kind"),
    (dict(FIRE, agent_id=""), "agent_id"),
    (dict(FIRE, importance=2.0), "importance"),
    (dict(FIRE, colour="red"), "colour"),
])
def test_a_bad_event_is_refused_with_its_index_and_field(event: dict[str, Any],
                                                          field: str) -> None:
    with pytest.raises(InputInvalidError) as info:
        parse_events([WALK, event])
    assert info.value.message.startswith("events[1]")
    assert info.value.details["index"] == 1
    assert field in info.value.message or field in str(info.value.details)
    assert "torch-1" not in info.value.message  # values are never echoed


@pytest.mark.parametrize("events", ["movement", {"kind": "movement"}, 7, None])
def test_events_must_be_a_list(events: Any) -> None:
    with pytest.raises(InputInvalidError, match="events must be a list"):
        parse_events(events)


def test_the_contact_table_counts_and_refuses_bad_rows() -> None:
    table = ContactTable()
    table.record([("a", "fire"), ("a", "fire"), ("b", "ice")], now=5)
    table.record([("a", "fire")], now=9)
    slot = table.slot(("a", "fire"))
    assert slot is not None
    assert [int(table.column(c)[slot]) for c in ContactTable.INTS] == [5, 9, 3]
    meta, arrays = table.get_state()
    bad = dict(arrays, count=np.zeros(2, dtype=np.int64))
    with pytest.raises(ValueError, match="count"):
        ContactTable().set_state(meta, bad)
    table._check()


def test_settings_are_validated() -> None:
    with pytest.raises(ConfigInvalidError):
        SpatialSettings(cell_size=0)
    with pytest.raises(ConfigInvalidError):
        SpatialSettings(proximity_scale=float("inf"))
    with pytest.raises(ConfigInvalidError):
        SpatialSettings(ingest_movement="yes")
