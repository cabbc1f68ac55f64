"""Security of the HTTP app: no secret leaves while redaction is ON, the toggle needs the
token, fuzzed requests are 4xx problems (never a 500), and no request reads or writes files."""

from __future__ import annotations

import hashlib
import json
import string
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

pytest.importorskip("fastapi")

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.endpoints.problems import PROBLEM_MEDIA_TYPE

from .conftest import CARD, EMAIL, MARKERS, TOKEN, owner_thread, secret_engine

Serve = Callable[..., Any]
AUTH = {"Authorization": f"Bearer {TOKEN}"}
SECRET_QUERY = f"{EMAIL} {CARD}"

GETS = [
    "/api/agents",
    "/api/agents/npc-1/snapshot",
    "/api/agents/npc-1/snapshot?layer=episodic&limit=2",
    "/api/agents/npc-2/snapshot",
    "/api/memory",
    "/api/memory?agentId=npc-1&limit=1&offset=1",
    "/api/memory/search?" + "&".join(f"q={quote(q)}" for q in [SECRET_QUERY]),
    "/api/memory/search?q=" + quote("alice secret example com debt card 4111 1111"),
    "/api/memory/search?q=" + quote(EMAIL) + "&agentId=npc-2",
    "/api/metrics",
    "/metrics",
    "/debug/memory",
    "/api/redaction",
    "/openapi.json",
    # errors must not echo the secret either
    "/api/agents/" + quote(EMAIL) + "/snapshot",
    "/api/memory?limit=" + quote(CARD),
    "/api/memory?agentId=" + quote(EMAIL),
    "/api/memory/search?q=" + quote(EMAIL) + "&limit=" + quote(EMAIL),
    "/api/agents/npc-1/diff?since=" + quote(CARD),
    "/static/" + quote(EMAIL) + ".js",
]
POSTS: list[tuple[str, Any]] = [
    ("/api/agents/npc-1/explain", {"purpose": "dialog", "maxTokens": 400,
                                   "query": SECRET_QUERY}),
    ("/api/agents/npc-1/explain", {"purpose": "dialog", "limit": 10, "tagsAny": [EMAIL]}),
    ("/api/agents/npc-2/explain", {"purpose": "reasoning", "maxTokens": 400,
                                   "statuses": ["active", "superseded"]}),
    ("/api/agents/npc-1/explain", {"purpose": "dialog", "maxTokens": 400, EMAIL: CARD}),
    ("/api/agents/npc-1/explain", {"purpose": EMAIL, "maxTokens": CARD}),
    ("/api/agents/npc-1/explain", {"purpose": "dialog", "maxTokens": 400,
                                   "attributes": {EMAIL: [CARD]}}),
    ("/api/redaction", {"redaction": EMAIL}),
]


def leaks(text: str) -> list[str]:
    return [m for m in MARKERS if m in text]


def all_answers(client: Any) -> Iterator[tuple[str, Any]]:
    for url in GETS:
        yield url, client.get(url)
    version = client.get("/api/agents/npc-1/snapshot").json()["version"]
    host = client.app.state.host
    host.call(lambda e: e.ingest("npc-1", f"Another note for {EMAIL}", now=6_000))
    yield "diff", client.get(f"/api/agents/npc-1/diff?since={version}")
    for url, body in POSTS:
        yield url, client.post(url, json=body)
        yield url, client.post(url, json=body, headers=AUTH)


def test_no_raw_secret_leaves_any_endpoint_while_redaction_is_on(serve: Serve) -> None:
    client = serve(secret_engine())
    seen = 0
    for url, response in all_answers(client):
        assert response.status_code < 500, url
        assert [] == leaks(response.text), url
        seen += 1
    assert seen > 25
    assert {"redaction": True} == client.get("/api/redaction").json()


def test_the_markers_are_real_secrets_shown_when_redaction_is_off(serve: Serve) -> None:
    """The test above is meaningful: the engine stores the raw text, OFF shows it."""
    client = serve(secret_engine())
    assert 200 == client.post("/api/redaction", json={"redaction": False},
                              headers=AUTH).status_code
    text = client.get("/api/agents/npc-1/snapshot").text
    assert EMAIL in text and CARD in text
    assert 200 == client.post("/api/redaction", json={"redaction": True},
                              headers=AUTH).status_code
    assert [] == leaks(client.get("/api/agents/npc-1/snapshot").text)


@pytest.mark.parametrize("headers", [
    {}, {"Authorization": "Bearer"}, {"Authorization": "Bearer wrong-token"},
    {"Authorization": f"Bearer {TOKEN}x"}, {"Authorization": f"Bearer {TOKEN[:-1]}"},
    {"Authorization": f"Token {TOKEN}"}, {"Authorization": TOKEN},
    {"X-Token": TOKEN}, {"Cookie": f"token={TOKEN}"},
])
def test_the_mutating_endpoint_rejects_a_missing_or_wrong_token(serve: Serve,
                                                               headers: dict[str, str]) -> None:
    client = serve(secret_engine())
    response = client.post("/api/redaction", json={"redaction": False}, headers=headers)
    assert response.status_code in (401, 403)
    assert PROBLEM_MEDIA_TYPE == response.headers["content-type"]
    assert TOKEN not in response.text
    assert {"redaction": True} == client.get("/api/redaction").json()


def test_no_route_writes_to_the_engine(serve: Serve) -> None:
    engine = secret_engine()
    before = engine.state_hash()
    client = serve(engine)
    for url in GETS:
        client.get(url)
    for url, body in POSTS:
        client.post(url, json=body, headers=AUTH)
    for method in ("put", "patch", "delete"):
        for url in ("/api/agents", "/api/agents/npc-1/snapshot", "/api/memory",
                    "/api/redaction", "/debug/memory"):
            response = client.request(method, url, json={"redaction": False}, headers=AUTH)
            assert 405 == response.status_code
    host = client.app.state.host
    assert before == host.call(lambda e: e.state_hash())


def test_no_route_takes_a_file_path(serve: Serve) -> None:
    client = serve(secret_engine())
    spec = client.get("/openapi.json").json()
    names = {p["name"].lower() for ops in spec["paths"].values() for op in ops.values()
             for p in op.get("parameters", [])}
    assert not names & {"path", "file", "filename", "db", "dir", "directory", "url"}
    assert names <= {"agent_id", "layer", "limit", "offset", "since", "agentid", "q"}


def digest_tree(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file()}


def test_serving_a_durable_store_writes_no_file(serve: Serve, tmp_path: Path) -> None:
    db = tmp_path / "village.db"
    engine = MemoryEngine.open(db, MemoryConfig(redaction_mode=False), seed=1)
    engine.ingest("npc-1", f"Alice wrote from {EMAIL}", now=1_000)
    engine.ingest("npc-1", f"Paid with card {CARD}", now=2_000)
    engine.close()
    client = serve(lambda: MemoryEngine.open(db))
    client.get("/api/agents")  # the store is open and served
    before = digest_tree(tmp_path)
    for url, response in all_answers_read_only(client):
        assert response.status_code < 500, url
        assert [] == leaks(response.text), url
    assert before == digest_tree(tmp_path)


def all_answers_read_only(client: Any) -> Iterator[tuple[str, Any]]:
    for url in GETS:
        yield url, client.get(url)
    for url, body in POSTS:
        yield url, client.post(url, json=body, headers=AUTH)
        yield url, client.post(url, json={"redaction": True}, headers=AUTH)


# ------------------------------------------------------------------ fuzzing
@pytest.fixture(scope="module")
def fuzz_client() -> Iterator[Any]:
    from starlette.testclient import TestClient

    from f09_memory.endpoints.app import create_app
    from f09_memory.endpoints.settings import ServerSettings

    engine = secret_engine()
    before = engine.state_hash()
    with owner_thread(engine) as host:
        app = create_app(host, ServerSettings(token=TOKEN))
        yield TestClient(app, base_url="http://127.0.0.1")
    assert before == engine.state_hash()


def check(response: Any) -> None:
    assert response.status_code < 500, response.text
    if response.status_code >= 400:
        assert PROBLEM_MEDIA_TYPE == response.headers["content-type"]
        body = response.json()
        assert body["status"] == response.status_code and body["code"]
    assert [] == leaks(response.text)


TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
SEGMENT = st.one_of(
    TEXT.map(lambda s: quote(s, safe="")),
    st.sampled_from(["..", ".", "%2e%2e", "%2f", "%5c", "%00", "npc-1", "snapshot", "diff",
                     "explain", "api", "agents", "memory", "search", "static", "index.html",
                     quote(EMAIL), "%ff", "%", "%zz", "~", "*"]),
)
FUZZ = settings(max_examples=40, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture,
                                       HealthCheck.too_slow])


@FUZZ
@given(st.lists(SEGMENT, min_size=1, max_size=5),
       st.sampled_from(["", "/api/", "/api/agents/", "/static/", "/api/memory/"]))
def test_fuzzed_paths_are_never_a_500(fuzz_client: Any, segments: list[str],
                                      prefix: str) -> None:
    url = "/" + (prefix.rstrip("/") + "/" + "/".join(segments)).lstrip("/")  # no "//x"
    response = fuzz_client.get(url)
    check(response)
    if response.status_code == 200 and not url.startswith("/api"):
        assert "root:" not in response.text


ROUTES = ["/api/agents", "/api/agents/npc-1/snapshot", "/api/agents/npc-1/diff",
          "/api/memory", "/api/memory/search", "/api/metrics", "/debug/memory",
          "/api/redaction", "/metrics"]
NAMES = st.sampled_from(["layer", "limit", "offset", "since", "q", "agentId", "agent_id"])
VALUES = st.one_of(TEXT, st.integers(-2**70, 2**70).map(str),
                   st.floats(allow_nan=True).map(str), st.sampled_from([
                       "", "0", "-1", "1e9", "episodic", "npc-1", EMAIL, CARD, "%00", "null"]))


@FUZZ
@given(st.sampled_from(ROUTES), st.lists(st.tuples(st.one_of(NAMES, TEXT), VALUES),
                                         max_size=6))
def test_fuzzed_query_strings_are_never_a_500(fuzz_client: Any, route: str,
                                              params: list[tuple[str, str]]) -> None:
    check(fuzz_client.get(route, params=params))


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-2**70, 2**70) | st.floats() | TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(TEXT, inner, max_size=4),
    max_leaves=12)
FIELDS = st.sampled_from(["agentId", "purpose", "maxTokens", "strategy", "query", "limit",
                          "layers", "tagsAny", "tagsAll", "since", "until", "attributes",
                          "queryVector", "position", "statuses", "pressureState", "model"])
REQUESTS = st.dictionaries(FIELDS, JSON | st.sampled_from(
    ["dialog", "balanced", "episodic", 10, 0, -5, [0.1, 0.2], [1, 2, 3], "npc-1"]),
    max_size=6).map(lambda d: {"purpose": "dialog", "maxTokens": 100, **d})


@FUZZ
@given(st.one_of(REQUESTS, JSON), st.sampled_from(["npc-1", "npc-2", "npc-9"]))
def test_fuzzed_explain_bodies_are_never_a_500(fuzz_client: Any, body: Any,
                                               agent: str) -> None:
    data = json.dumps(body, allow_nan=True).encode()
    check(fuzz_client.post(f"/api/agents/{agent}/explain", content=data,
                           headers={"content-type": "application/json"}))


@FUZZ
@given(st.one_of(st.binary(max_size=200), JSON.map(lambda v: json.dumps(v).encode())),
       st.sampled_from(["/api/agents/npc-1/explain", "/api/redaction"]),
       st.sampled_from(["application/json", "text/plain", "application/x-www-form-urlencoded",
                        "multipart/form-data; boundary=x", ""]),
       st.booleans())
def test_fuzzed_raw_bodies_are_never_a_500(fuzz_client: Any, data: bytes, route: str,
                                           content_type: str, auth: bool) -> None:
    headers = {"content-type": content_type} if content_type else {}
    if auth:
        headers.update(AUTH)
    response = fuzz_client.post(route, content=data, headers=headers)
    check(response)
    if route == "/api/redaction" and response.status_code == 200:
        fuzz_client.post(route, json={"redaction": True}, headers=AUTH)  # back ON


def test_printable_ascii_agent_ids_are_404_not_500(fuzz_client: Any) -> None:
    for char in string.printable:
        check(fuzz_client.get(f"/api/agents/{quote(char, safe='')}x/snapshot"))
