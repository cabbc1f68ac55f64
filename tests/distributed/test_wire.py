"""What a crowd call carries: requests sent as the fields they set, rebuilt exactly."""

from __future__ import annotations

import pickle

import pytest

from f09_memory import RetrievalRequest
from f09_memory.distributed.grouping import Grouper, bundle_places, scatter
from f09_memory.distributed.routing import ShardRouter
from f09_memory.distributed.wire import decode_requests, encode_requests
from f09_memory.errors import InputInvalidError
from f09_memory.schema.base import trusted_factory


def _requests() -> list[RetrievalRequest]:
    return [
        RetrievalRequest(agent_id="a", purpose="dialog", max_tokens=200),
        RetrievalRequest(agent_id="b", purpose="navigation", max_tokens=300, strategy="recency",
                         layers=("episodic", "spatial"), query="the well", position=(1.0, 2.0),
                         since=3, tags_any=("x",), attributes={"mood": "calm"}),
        RetrievalRequest(agent_id="c", purpose="summary", limit=4),
        RetrievalRequest(agent_id="d", purpose="dialog", max_tokens=9).model_copy(
            update={"query": "copied"}),
    ]


def test_encoded_requests_rebuild_every_field_exactly() -> None:
    requests = _requests()
    encoded = pickle.loads(pickle.dumps(encode_requests(requests)))
    make = trusted_factory(RetrievalRequest)
    rebuilt = [make(values) for values in decode_requests(encoded)]
    assert [vars(r) for r in requests] == [vars(r) for r in rebuilt]
    assert requests == rebuilt


def test_only_the_fields_some_request_set_are_sent() -> None:
    fields, rows = encode_requests([RetrievalRequest(agent_id=f"npc-{i}", purpose="dialog",
                                                     max_tokens=100 + i) for i in range(50)])
    assert ("agent_id", "purpose", "max_tokens") == fields
    assert 50 == len(rows) and ("npc-7", "dialog", 107) == rows[7]
    assert ((), []) == encode_requests([])


def test_a_split_puts_answers_back_in_caller_order_and_reuses_positions() -> None:
    grouper = Grouper(ShardRouter(3))
    items = [{"agent_id": f"npc-{i % 7}", "content": str(i)} for i in range(40)]
    parts, where = grouper.items(items)
    again, where_again = grouper.items(list(items))
    assert parts == again and where is where_again  # same shards: positions reused
    answers = {i: [item["content"] for item in part] for i, part in parts.items()}
    assert [item["content"] for item in items] == scatter(where, answers, len(items))
    places = bundle_places(where, len(items))
    assert all(parts[i][j] is items[n] for n, (i, j) in enumerate(places))


@pytest.mark.parametrize("bad", [[{"content": "no agent"}], [{"agent_id": 3}], ["text"]])
def test_an_item_without_a_string_agent_id_is_refused(bad: list[object]) -> None:
    with pytest.raises(InputInvalidError) as info:
        Grouper(ShardRouter(2)).items([{"agent_id": "a", "content": "ok"}, *bad])
    assert 1 == info.value.details["index"]


def test_a_request_without_an_agent_id_is_refused() -> None:
    with pytest.raises(InputInvalidError) as info:
        Grouper(ShardRouter(2)).requests([{"agentId": "a", "purpose": "dialog"},
                                          {"purpose": "dialog"}])
    assert 1 == info.value.details["index"]
