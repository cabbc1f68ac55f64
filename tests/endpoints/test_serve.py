"""``f09-memory serve``: arguments, the binding warning, the owner thread, the demo loop and a
real uvicorn run answering ``/api/agents``."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.cli import main
from f09_memory.determinism.scenario import run_village, scripted_village_llm
from f09_memory.endpoints.demo import DEMO_CONFIG, DEMO_TICK_MS, demo_engine, run_demo
from f09_memory.endpoints.host import EngineHost
from f09_memory.errors import InputInvalidError

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("argv", [
    ["serve"],  # --demo or --db is required
    ["serve", "--demo", "--db", "x.db"],
    ["serve", "--demo", "--port", "0"],
    ["serve", "--demo", "--port", "70000"],
    ["serve", "--demo", "--port", "http"],
    ["serve", "--demo", "--agents", "0"],
    ["serve", "--demo", "--tick-interval-ms", "-5"],
])
def test_bad_serve_arguments_exit_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(argv)
    assert 2 == info.value.code
    assert "usage:" in capsys.readouterr().err


def test_a_missing_database_is_an_error_not_a_new_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("fastapi")
    db = tmp_path / "nothing.db"
    assert 2 == main(["serve", "--db", str(db)])
    assert "no database file" in capsys.readouterr().err
    assert not db.exists()


def test_without_the_server_extra_serve_says_what_to_install(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    from f09_memory.endpoints import app

    monkeypatch.setattr(app, "server_available", lambda: False)
    assert 2 == main(["serve", "--demo"])
    assert "pip install 'f09-memory[server]'" in capsys.readouterr().err


class FakeServe:
    def __init__(self) -> None:
        self.kwargs: dict[str, Any] = {}

    def __call__(self, **kwargs: Any) -> int:
        self.kwargs = kwargs
        return 0


@pytest.fixture
def fake_serve(monkeypatch: pytest.MonkeyPatch) -> FakeServe:
    pytest.importorskip("fastapi")
    from f09_memory.endpoints import serve

    fake = FakeServe()
    monkeypatch.setattr(serve, "serve", fake)
    return fake


def test_loopback_is_the_default_and_binds_quietly(
        fake_serve: FakeServe, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("MEMORY_SERVER_TOKEN", "a-token-for-the-toggle")
    assert 0 == main(["serve", "--demo"])
    assert ("127.0.0.1", 8765) == (fake_serve.kwargs["bind"], fake_serve.kwargs["port"])
    settings = fake_serve.kwargs["settings"]
    assert settings.token_configured and "127.0.0.1" in settings.allowed_hosts
    assert "warning" not in capsys.readouterr().err


@pytest.mark.parametrize("bind", ["0.0.0.0", "192.168.1.20", "::", "example.org"])
def test_any_other_host_prints_a_warning(fake_serve: FakeServe, bind: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    assert 0 == main(["serve", "--demo", "--host", bind, "--port", "9000",
                      "--allow-host", "viewer.lan"])
    err = capsys.readouterr().err
    assert f"warning: --host {bind} is not a loopback address" in err
    allowed = fake_serve.kwargs["settings"].allowed_hosts
    assert "viewer.lan" in allowed and "localhost" in allowed
    assert (bind not in ("0.0.0.0", "::")) == (bind in allowed)


def test_the_token_comes_from_the_named_variable_and_is_never_an_argument(
        fake_serve: FakeServe, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.delenv("MEMORY_SERVER_TOKEN", raising=False)
    monkeypatch.setenv("VIEWER_TOKEN", "from-another-variable")
    assert 0 == main(["serve", "--demo", "--token-env", "VIEWER_TOKEN"])
    token = fake_serve.kwargs["settings"].token
    assert "from-another-variable" == token.get_secret_value()
    assert 0 == main(["serve", "--demo"])
    assert fake_serve.kwargs["settings"].token is None
    assert "the redaction toggle is refused" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["serve", "--demo", "--token", "on-the-command-line"])


def test_the_demo_is_the_village_whatever_the_pace_and_the_reads() -> None:
    """Pacing and the readers change nothing: the demo's hash is run_village's."""
    box: list[Any] = []

    def owner() -> None:
        host = EngineHost(demo_engine(seed=5))
        box.append(host)
        while host.pending() == 0:  # a reader is waiting before the first tick
            time.sleep(0.001)
        box.append(run_demo(host, threading.Event(), agents=4, seed=5, interval_s=0.0,
                            ticks=12))
        box.append(host.engine.state_hash())
        host.close()

    thread = threading.Thread(target=owner)
    thread.start()
    while not box:
        time.sleep(0.001)
    host: EngineHost = box[0]
    counts = []
    while thread.is_alive():
        try:
            counts.append(host.call(lambda e: e.count(), timeout_s=30))
        except Exception:
            break
    thread.join(30)
    reference = MemoryEngine(MemoryConfig(**DEMO_CONFIG), seed=5)
    expected = run_village(reference, agents=4, ticks=12, seed=5, tick_ms=DEMO_TICK_MS,
                           llm=scripted_village_llm())
    assert 12 == box[1]
    assert expected.state_hash == box[2]
    assert counts and counts[-1] > 0  # reads were answered while the village ran


def test_the_demo_stops_when_asked_and_checks_its_arguments() -> None:
    engine = demo_engine()
    host = EngineHost(engine)
    stop = threading.Event()
    stop.set()
    assert 1 == run_demo(host, stop, agents=2, interval_s=0.0)  # stops after the 1st tick
    with pytest.raises(InputInvalidError):
        run_demo(host, stop, agents=0)
    with pytest.raises(InputInvalidError):
        run_demo(host, stop, interval_s=-1)


def test_a_durable_store_is_opened_and_closed_on_its_owner_thread(tmp_path: Path) -> None:
    pytest.importorskip("fastapi")
    from f09_memory.endpoints.serve import OwnerThread

    db = tmp_path / "v.db"
    engine = MemoryEngine.open(db, seed=3)
    engine.ingest("npc-1", "Saw the smith at the well", now=10)
    expected = engine.state_hash()
    engine.close()
    owner = OwnerThread(lambda: MemoryEngine.open(db),
                        lambda host, stop: host.serve_forever(stop))
    host = owner.start()
    assert (1, expected) == host.call(lambda e: (e.count(), e.state_hash()), timeout_s=30)
    assert host.collector is not None
    owner.join()
    assert owner.error is None and host.closed
    reopened = MemoryEngine.open(db)  # closed and released by the owner thread
    assert expected == reopened.state_hash()
    reopened.close()


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_real_server_answers_and_stops_cleanly() -> None:
    pytest.importorskip("fastapi")
    httpx = pytest.importorskip("httpx")
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT), "MEMORY_SERVER_TOKEN": "serve-test-token"}
    proc = subprocess.Popen(
        [sys.executable, "-m", "f09_memory.cli", "serve", "--demo", "--agents", "3",
         "--port", str(port), "--tick-interval-ms", "20"],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        body = None
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                response = httpx.get(f"http://127.0.0.1:{port}/api/agents", timeout=5)
            except httpx.TransportError:
                time.sleep(0.1)
                continue
            body = response.json()
            if body["agents"]:
                break
            time.sleep(0.1)
        assert body is not None and body["agents"], proc.stderr.read() if proc.stderr else ""
        assert {"npc-000", "npc-001", "npc-002"} >= {a["agentId"] for a in body["agents"]}
        refused = httpx.get(f"http://127.0.0.1:{port}/api/agents",
                            headers={"host": "evil.example"}, timeout=5)
        assert 400 == refused.status_code
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            _, err = proc.communicate()
    assert 0 == proc.returncode, err
    assert f"http://127.0.0.1:{port}/" in err
