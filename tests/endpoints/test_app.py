"""The HTTP app: routes, bodies, errors as problem+json, the redaction toggle, static files."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("fastapi")

from f09_memory import MemoryEngine, RetrievalRequest
from f09_memory.endpoints import static
from f09_memory.endpoints.host import EngineHost
from f09_memory.endpoints.problems import PROBLEM_MEDIA_TYPE

from .conftest import TOKEN, secret_engine

Serve = Callable[..., Any]
AUTH = {"Authorization": f"Bearer {TOKEN}"}


def problem(response: Any, status: int, code: str) -> dict[str, Any]:
    assert status == response.status_code, response.text
    assert response.headers["content-type"] == PROBLEM_MEDIA_TYPE
    body = response.json()
    assert {"type", "title", "status", "detail", "code"} == set(body)
    assert (status, code) == (body["status"], body["code"])
    return dict(body)


def test_agents_lists_every_agent_sorted_with_counts(serve: Serve) -> None:
    engine = secret_engine()
    client = serve(engine)
    body = client.get("/api/agents").json()
    assert ["npc-1", "npc-2"] == [a["agentId"] for a in body["agents"]]
    assert [3, 2] == [a["records"] for a in body["agents"]]
    assert 5_000 == body["now"] and isinstance(body["version"], int)


def test_snapshot_pages_an_agents_records_newest_first(serve: Serve) -> None:
    engine = secret_engine()
    client = serve(engine)
    whole = client.get("/api/agents/npc-1/snapshot").json()
    assert 3 == whole["total"] == len(whole["records"])
    assert "npc-1" == whole["agentId"]
    ids = [r["id"] for r in whole["records"]]
    assert [r["createdAt"] for r in whole["records"]] == [3_000, 2_000, 1_000]
    page = client.get("/api/agents/npc-1/snapshot?limit=1&offset=1").json()
    assert (3, 1, 1) == (page["total"], page["limit"], page["offset"])
    assert ids[1:2] == [r["id"] for r in page["records"]]
    semantic = client.get("/api/agents/npc-2/snapshot?layer=semantic").json()
    assert ["semantic"] == [r["layer"] for r in semantic["records"]]
    assert {"recencyAnchor", "tokensEstimate", "sourceEvent"} <= set(whole["records"][0])


def test_diff_since_a_snapshot_names_what_was_added(serve: Serve) -> None:
    engine = secret_engine()
    client = serve(engine)
    version = client.get("/api/agents/npc-1/snapshot").json()["version"]
    host: EngineHost = client.app.state.host
    new = host.call(lambda e: e.ingest("npc-1", "A stranger came to the gate", now=6_000).id)
    diff = client.get(f"/api/agents/npc-1/diff?since={version}").json()
    assert version == diff["since"] and diff["version"] > version
    assert [new] == [r["id"] for r in diff["added"]]
    assert [] == diff["removed"]
    problem(client.get("/api/agents/npc-1/diff?since=999999"), 422, "MEMORY_INPUT_INVALID")
    problem(client.get("/api/agents/npc-1/diff"), 422, "MEMORY_INPUT_INVALID")


def test_explain_ranks_as_retrieve_does(serve: Serve) -> None:
    engine = secret_engine()
    client = serve(engine)
    body = {"purpose": "dialog", "maxTokens": 300, "query": "smith well"}
    explanation = client.post("/api/agents/npc-1/explain", json=body).json()
    host: EngineHost = client.app.state.host
    bundle = host.call(lambda e: e.retrieve(RetrievalRequest(agent_id="npc-1", **{
        "purpose": "dialog", "max_tokens": 300, "query": "smith well"})))
    assert [r.id for r in bundle.records] == explanation["bundleIds"]
    assert "npc-1" == explanation["agentId"]
    same = client.post("/api/agents/npc-1/explain", json={**body, "agentId": "npc-1"})
    assert explanation["bundleIds"] == same.json()["bundleIds"]


@pytest.mark.parametrize(("body", "code"), [
    ({"purpose": "dialog", "maxTokens": 300, "agentId": "npc-2"}, "MEMORY_INPUT_INVALID"),
    ({"maxTokens": 300}, "MEMORY_INPUT_INVALID"),
    ({"purpose": "juggling", "maxTokens": 300}, "MEMORY_INPUT_INVALID"),
    ({"purpose": "dialog", "maxTokens": -1}, "MEMORY_TOKEN_BUDGET_UNDEFINED"),
    ({"purpose": "dialog", "maxTokens": 300, "surprise": 1}, "MEMORY_INPUT_INVALID"),
    ([1, 2, 3], "MEMORY_INPUT_INVALID"),
])
def test_a_bad_explain_body_is_a_422_naming_the_field(serve: Serve, body: Any,
                                                     code: str) -> None:
    client = serve(secret_engine())
    problem(client.post("/api/agents/npc-1/explain", json=body), 422, code)


def test_a_body_that_is_not_json_is_a_422(serve: Serve) -> None:
    client = serve(secret_engine())
    response = client.post("/api/agents/npc-1/explain", content=b"{not json",
                           headers={"content-type": "application/json"})
    assert "JSON" in problem(response, 422, "MEMORY_INPUT_INVALID")["detail"]


@pytest.mark.parametrize("url", [
    "/api/agents/npc-9/snapshot", "/api/agents/npc-9/diff?since=1",
    "/api/memory?agentId=npc-9", "/api/memory/search?q=well&agentId=npc-9",
    "/no/such/route", "/api", "/static/missing.js",
])
def test_unknown_agents_routes_and_files_are_404_problems(serve: Serve, url: str) -> None:
    client = serve(secret_engine())
    body = problem(client.get(url), 404, "HTTP_NOT_FOUND")
    assert "npc-9" not in body["detail"]
    problem(client.post("/api/agents/npc-9/explain", json={"purpose": "dialog",
                                                           "maxTokens": 10}),
            404, "HTTP_NOT_FOUND")


def test_a_wrong_method_is_a_405_problem(serve: Serve) -> None:
    client = serve(secret_engine())
    problem(client.delete("/api/agents"), 405, "HTTP_METHOD_NOT_ALLOWED")
    problem(client.put("/api/redaction", json={"redaction": False}), 405,
            "HTTP_METHOD_NOT_ALLOWED")


def test_memory_pages_all_agents_and_one(serve: Serve) -> None:
    client = serve(secret_engine())
    first = client.get("/api/memory?limit=2").json()
    assert (5, 2, None) == (first["total"], len(first["records"]), first["agentId"])
    rest = client.get("/api/memory?limit=2&offset=2").json()
    assert not {r["id"] for r in first["records"]} & {r["id"] for r in rest["records"]}
    one = client.get("/api/memory?agentId=npc-2").json()
    assert {"npc-2"} == {r["agentId"] for r in one["records"]}
    problem(client.get("/api/memory?limit=0"), 422, "MEMORY_INPUT_INVALID")
    problem(client.get("/api/memory?limit=10&offset=-1"), 422, "MEMORY_INPUT_INVALID")
    problem(client.get("/api/memory?limit=ten"), 422, "MEMORY_INPUT_INVALID")


def test_search_ranks_by_lexical_overlap_then_id(serve: Serve) -> None:
    client = serve(secret_engine())
    body = client.get("/api/memory/search", params={"q": "smith well", "limit": 5}).json()
    scores = [(hit["score"], hit["record"]["content"]) for hit in body["results"]]
    assert (2.0, "Saw the smith at the well") == scores[0]
    assert [s for s, _ in scores] == sorted((s for s, _ in scores), reverse=True)
    assert "smith well" == body["query"]
    one = client.get("/api/memory/search", params={"q": "well", "agentId": "npc-2"}).json()
    assert ["npc-2"] == [hit["record"]["agentId"] for hit in one["results"]]
    problem(client.get("/api/memory/search"), 422, "MEMORY_INPUT_INVALID")
    problem(client.get("/api/memory/search?q="), 422, "MEMORY_INPUT_INVALID")


def test_a_secret_cannot_be_found_by_search_while_redaction_is_on(serve: Serve) -> None:
    client = serve(secret_engine())
    found = client.get("/api/memory/search", params={"q": "alice.secret@example.com"}).json()
    assert "alice.secret" not in found["query"]
    texts = [hit["record"]["content"] for hit in found["results"]]
    assert all("alice.secret" not in t for t in texts)
    assert 200 == client.post("/api/redaction", json={"redaction": False},
                              headers=AUTH).status_code
    raw = client.get("/api/memory/search", params={"q": "alice secret"}).json()
    assert any("alice.secret@example.com" in hit["record"]["content"]
               for hit in raw["results"])


def test_metrics_json_text_and_debug(serve: Serve) -> None:
    client = serve(secret_engine())
    page = client.get("/api/metrics").json()
    assert {"metrics", "series"} == set(page)
    assert {"aggregate", "agents"} <= set(page["metrics"])
    text = client.get("/metrics")
    assert 200 == text.status_code and text.headers["content-type"].startswith("text/plain")
    debug = client.get("/debug/memory").json()
    assert 5 == debug["stats"]["records"] and debug["metrics"] is not None


def test_without_prometheus_client_metrics_text_is_a_501(serve: Serve,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    real_import = builtins.__import__

    def no_prometheus(name: str, *args: Any, **kwargs: Any) -> Any:
        if name.startswith("prometheus_client"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    client = serve(secret_engine())
    monkeypatch.setattr(builtins, "__import__", no_prometheus)
    body = problem(client.get("/metrics"), 501, "MEMORY_CONFIG_INVALID")
    assert "pip install" in body["detail"]
    assert 200 == client.get("/api/metrics").status_code  # the JSON page needs no extra


def test_without_a_collector_metrics_are_a_503_and_debug_has_none(serve: Serve) -> None:
    client = serve(secret_engine(), collector=False)
    problem(client.get("/api/metrics"), 503, "HTTP_SERVICE_UNAVAILABLE")
    problem(client.get("/metrics"), 503, "HTTP_SERVICE_UNAVAILABLE")
    assert client.get("/debug/memory").json()["metrics"] is None


def test_the_redaction_toggle_needs_the_token(serve: Serve) -> None:
    client = serve(secret_engine())
    assert {"redaction": True} == client.get("/api/redaction").json()
    missing = client.post("/api/redaction", json={"redaction": False})
    problem(missing, 401, "HTTP_UNAUTHORIZED")
    assert "Bearer" == missing.headers["www-authenticate"]
    problem(client.post("/api/redaction", json={"redaction": False},
                        headers={"Authorization": "Bearer wrong"}), 403, "HTTP_FORBIDDEN")
    problem(client.post("/api/redaction", json={"redaction": False},
                        headers={"Authorization": f"Basic {TOKEN}"}), 401,
            "HTTP_UNAUTHORIZED")
    problem(client.post("/api/redaction", json={"redaction": "off"}, headers=AUTH), 422,
            "MEMORY_INPUT_INVALID")
    assert {"redaction": True} == client.get("/api/redaction").json()
    off = client.post("/api/redaction", json={"redaction": False}, headers=AUTH)
    assert {"redaction": False} == off.json()
    records = client.get("/api/agents/npc-1/snapshot").json()["records"]
    assert any("alice.secret@example.com" in r["content"] for r in records)


def test_without_a_configured_token_the_toggle_is_refused(serve: Serve) -> None:
    client = serve(secret_engine(), token=None)
    for headers in ({}, AUTH, {"Authorization": "Bearer "}):
        problem(client.post("/api/redaction", json={"redaction": False}, headers=headers),
                403, "HTTP_FORBIDDEN")
    assert {"redaction": True} == client.get("/api/redaction").json()


def test_a_busy_owner_is_a_503_with_retry_after() -> None:
    from starlette.testclient import TestClient

    from f09_memory.endpoints.app import create_app
    from f09_memory.endpoints.settings import ServerSettings

    host = EngineHost(MemoryEngine(seed=0, embedder=None))  # owned here; nobody pumps
    client = TestClient(create_app(host, ServerSettings(job_timeout_s=0.05)),
                        base_url="http://127.0.0.1")
    response = client.get("/api/agents")
    problem(response, 503, "HOST_BUSY")
    assert "1" == response.headers["retry-after"]
    assert 0 == host.pump()  # the timed-out job does not run later


def test_a_foreign_host_header_is_refused(serve: Serve) -> None:
    client = serve(secret_engine())
    problem(client.get("/api/agents", headers={"host": "evil.example"}), 400,
            "HOST_NOT_ALLOWED")
    assert 200 == client.get("/api/agents", headers={"host": "localhost:8765"}).status_code
    anyone = serve(secret_engine(), allowed_hosts=("*",))
    assert 200 == anyone.get("/api/agents", headers={"host": "evil.example"}).status_code


def test_a_body_over_the_limit_is_a_413(serve: Serve) -> None:
    client = serve(secret_engine(), max_body_bytes=1_024)
    big = {"purpose": "dialog", "maxTokens": 10, "query": "x" * 2_000}
    problem(client.post("/api/agents/npc-1/explain", json=big), 413,
            "HTTP_REQUEST_ENTITY_TOO_LARGE")

    def chunks() -> Any:
        yield b'{"purpose": "dialog", "query": "'
        for _ in range(40):
            yield b"y" * 100
        yield b'"}'

    streamed = client.post("/api/agents/npc-1/explain", content=chunks(),
                           headers={"content-type": "application/json"})
    problem(streamed, 413, "HTTP_REQUEST_ENTITY_TOO_LARGE")


def test_every_answer_carries_the_security_headers(serve: Serve) -> None:
    client = serve(secret_engine())
    for response in (client.get("/api/agents"), client.get("/nope"), client.get("/")):
        assert "nosniff" == response.headers["x-content-type-options"]
        assert "no-store" == response.headers["cache-control"]
        assert "default-src 'self'" in response.headers["content-security-policy"]


def test_openapi_names_the_models_in_camel_case(serve: Serve) -> None:
    client = serve(secret_engine())
    spec = client.get("/openapi.json").json()
    schemas = spec["components"]["schemas"]
    for name in ("AgentList", "MemorySnapshot", "MemoryDiff", "Explanation", "RecordView",
                 "SearchResults", "MetricsPage", "DebugMemory", "RedactionMode",
                 "ExplainRequest", "MetricsSnapshot", "TickPoint", "EngineStats"):
        assert name in schemas, name
    assert {"agentId", "createdAt", "tokensEstimate"} <= set(schemas["RecordView"]["properties"])
    assert "maxTokens" in schemas["ExplainRequest"]["properties"]
    assert {"/api/agents", "/api/agents/{agent_id}/snapshot", "/api/agents/{agent_id}/diff",
            "/api/agents/{agent_id}/explain", "/api/memory", "/api/memory/search",
            "/api/metrics", "/metrics", "/debug/memory", "/api/redaction"} == set(spec["paths"])
    assert 404 == client.get("/docs").status_code  # no page pulling a CDN script


@pytest.fixture
def static_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Point the static lookup at a temporary package folder (``<tmp>/static``)."""
    folder = tmp_path / "static"
    folder.mkdir()
    (folder / "index.html").write_text("<!doctype html><title>viewer</title>")
    (folder / "viewer.js").write_text("console.log('viewer')")
    (folder / "notes.exe").write_bytes(b"MZ")
    (tmp_path / "secret.txt").write_text("outside static")
    monkeypatch.setattr(static.resources, "files", lambda _package: tmp_path)
    return folder


def test_the_page_and_its_assets_are_served_from_the_static_folder(
        serve: Serve, static_dir: Path) -> None:
    client = serve(secret_engine())
    page = client.get("/")
    assert 200 == page.status_code and "text/html" in page.headers["content-type"]
    assert "<title>viewer</title>" in page.text
    script = client.get("/static/viewer.js")
    assert "text/javascript; charset=utf-8" == script.headers["content-type"]
    assert "console.log('viewer')" == script.text
    problem(client.get("/static/notes.exe"), 404, "HTTP_NOT_FOUND")  # not a served type
    problem(client.get("/static/secret.txt"), 404, "HTTP_NOT_FOUND")  # not in static/


@pytest.mark.parametrize("url", [
    "/static/../../etc/passwd", "/static/..%2f..%2fetc%2fpasswd",
    "/static/%2e%2e%2f%2e%2e%2fetc%2fpasswd", "/static/%2e%2e/%2e%2e/etc/passwd",
    "/static/..%5c..%5cetc%5cpasswd", "/static/....//....//etc/passwd",
    "/static/%252e%252e%252fetc%252fpasswd", "/static/.hidden.js", "/static/%2e%2e",
    "/static/index.html%00.js", "/static/%2fetc%2fpasswd", "/static//etc/passwd",
    "/static/..%2fsecret.txt", "/static/%2e%2e%2fsecret.txt",
])
def test_path_traversal_is_impossible(serve: Serve, static_dir: Path, url: str) -> None:
    client = serve(secret_engine())
    response = client.get(url)
    problem(response, 404, "HTTP_NOT_FOUND")
    assert "root:" not in response.text and "outside static" not in response.text


def test_a_snapshot_answer_is_the_models_json_byte_for_byte() -> None:
    """orjson writes the snapshot's JSON form exactly as pydantic writes the model."""
    from f09_memory.endpoints.app import _json, _json_data

    engine = secret_engine()
    engine.ingest("npc-1", "Zoë paid 1e-7 gold — «merci» \u2028 \x01 end", now=5_500,
                  importance=0.1 + 0.2, tags=["naïve", "x/y"], ttl=10_000,
                  source_event="trade \"quoted\"")
    engine.tick(9_999)
    for kwargs in ({}, {"agent_id": "npc-1"}, {"agent_id": "npc-2", "layer": "semantic"},
                   {"limit": 2, "offset": 1}, {"redact": False}):
        data = engine.introspection.snapshot_data(**kwargs)
        model = engine.introspection.snapshot(**kwargs)
        data["version"] = model.version
        assert _json_data(data).body == _json(model).body


def test_without_orjson_the_app_says_what_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    import importlib.util

    from f09_memory.endpoints import app
    from f09_memory.errors import ConfigInvalidError

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *a: None if name == "orjson" else real(name, *a))
    assert not app.server_available()
    with pytest.raises(ConfigInvalidError) as info:
        app.create_app(EngineHost(secret_engine()))
    assert info.value.details["field"] == "orjson"
    assert "pip install 'f09-memory[server]'" in str(info.value)
