from __future__ import annotations

import json
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from f09_memory.errors import InputInvalidError
from f09_memory.testing import DEFAULT_FAULTS, EmbeddingServer, FakeEmbedder, fault_schedule


def _post(url: str, texts: list[str], timeout: float = 5.0) -> tuple[int, bytes]:
    data = json.dumps({"model": "m", "input": texts}).encode()
    request = urllib.request.Request(url + "/v1/embeddings", data=data, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as err:
        return err.code, err.read()


@pytest.fixture()
def server() -> Iterator[EmbeddingServer]:
    with EmbeddingServer(FakeEmbedder(8).embed) as srv:
        yield srv


def test_a_correct_answer_is_recorded_as_answered(server) -> None:
    status, body = _post(server.base_url, ["a", "b"])
    rows = [item["embedding"] for item in json.loads(body)["data"]]
    assert 200 == status
    np.testing.assert_allclose(FakeEmbedder(8).embed(["a", "b"]), rows, atol=1e-7)
    assert [["a", "b"]] == server.answered and ["a", "b"] == server.inputs


def test_faulty_answers_are_received_but_not_answered(server) -> None:
    server.faults.extend([{"status": 429, "retry_after": "1"}, {"truncate": True},
                          {"count": 1}])
    assert 429 == _post(server.base_url, ["a"])[0]
    with pytest.raises(json.JSONDecodeError):
        json.loads(_post(server.base_url, ["a"])[1])
    assert 2 == len(json.loads(_post(server.base_url, ["a"])[1])["data"])
    assert 3 == len(server.bodies) and [] == server.answered


def test_a_slow_model_keeps_the_connection_alive_past_the_read_timeout() -> None:
    def slow(texts: list[str]) -> Any:
        time.sleep(2.0)
        return FakeEmbedder(8).embed(texts)

    # the timeout leaves room for a loaded machine's accept; the model runs twice as long
    with EmbeddingServer(slow, keepalive_s=0.05) as srv:
        status, body = _post(srv.base_url, ["a"], timeout=1.0)
    assert 200 == status and 1 == len(json.loads(body)["data"])


def test_a_closed_gate_holds_requests_until_opened(server) -> None:
    server.gate.clear()
    done = threading.Event()
    threading.Thread(target=lambda: (_post(server.base_url, ["a"]), done.set()),
                     daemon=True).start()
    assert not done.wait(0.3)
    server.gate.set()
    assert done.wait(5.0) and [["a"]] == server.answered


def test_fault_schedule_is_seeded_and_spreads_the_rate() -> None:
    a = fault_schedule(300, rate=0.1, seed=7)
    assert a == fault_schedule(300, rate=0.1, seed=7) != fault_schedule(300, rate=0.1, seed=8)
    assert 330 == len(a) and 30 == sum(1 for f in a if f)
    assert all(f in DEFAULT_FAULTS for f in a if f)
    assert "xxx" not in "".join("x" if f else "." for f in a)  # max_run=2
    dense = fault_schedule(300, rate=0.4, seed=7, max_run=1)
    assert "xx" not in "".join("x" if f else "." for f in dense)


@pytest.mark.parametrize("kwargs", [{"requests": -1}, {"rate": 1.0}, {"max_run": 0},
                                    {"kinds": ()}])
def test_fault_schedule_rejects_bad_arguments(kwargs) -> None:
    args: dict[str, Any] = {"requests": 20, **kwargs}
    with pytest.raises(InputInvalidError):
        fault_schedule(args.pop("requests"), **args)
