"""The Memory Viewer end to end, in a real headless Chromium driven by Playwright.

A seeded village simulation runs on its own thread, which owns the engine and pumps the
:class:`~f09_memory.endpoints.host.EngineHost` between two ticks (the server's thread model);
the real FastAPI app answers on uvicorn, on a free port of 127.0.0.1. The simulation only
advances when a test asks (``Village.advance``), so what the page shows is deterministic.

Needs the ``[server]`` and ``[browser]`` extras and a Chromium executable (the Debian package
``chromium``; ``.ci/run`` installs it): the module skips, saying which, when one is missing.

Run as a script, it writes the README's screenshot instead::

    python tests/endpoints/test_viewer_browser.py docs/viewer.png
"""

from __future__ import annotations

import shutil
import socket
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

pytest.importorskip("fastapi", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("uvicorn", reason="the [server] extra (fastapi, uvicorn) is not installed")
pytest.importorskip("playwright", reason="the [browser] extra (playwright) is not installed")

import uvicorn
from playwright.sync_api import Browser, Page, expect, sync_playwright

from f09_memory import MemoryEngine
from f09_memory.determinism.scenario import run_village
from f09_memory.endpoints import EngineHost, ServerSettings, create_app
from f09_memory.endpoints.demo import demo_engine, run_demo
from f09_memory.endpoints.serve import OwnerThread

T = TypeVar("T")

TOKEN = "viewer-test-token-5b1f"
AGENT = "npc-001"
"""The agent the tests look at (it gets the padding, the hostile and the secret records)."""
MARKER = "zq.marker.7731@vault.example"
"""A private value (an e-mail address: a default redaction pattern) stored raw."""
HOSTILE = '<img src=x onerror="window.__viewerPwned = 1">'
BULK = "npc-bulk"
BULK_RECORDS = 2_000
"""An agent outside the village with 2k records (the issue's size for the page)."""
PADDING = 140
"""Extra records of AGENT, so its records span several pages of 50."""
WARM_TICKS = 30
TIMEOUT_MS = 10_000


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


class _Stopped(Exception):
    """Raised in the simulation's tick callback to end the run."""


def _seeded_demo_engine(seed: int) -> MemoryEngine:
    """The demo's engine (raw text stored) with AGENT's extra records (on the owner thread)."""
    engine = demo_engine(seed)
    engine.ingest_many(AGENT, [
        {"content": f"Counted sacks of grain in the barn, row {i}.",
         "importance": round((i * 37 % 100) / 100, 2), "tags": ["barn"]}
        for i in range(PADDING)], now=0)
    engine.ingest_many(BULK, [  # 1,200 episodic (the demo's episodic_max), 800 spatial
        {"content": f"Ledger line {i}: {i % 7} barrels moved.", "importance": (i % 10) / 10,
         "layer": "episodic" if i % 5 < 3 else "spatial"}
        for i in range(BULK_RECORDS)], now=0)
    engine.ingest(AGENT, HOSTILE, importance=0.4, tags=["<b>tag</b>"], now=0)
    engine.ingest(AGENT, f"The vault's key holder writes from {MARKER} at night.",
                  importance=0.95, tags=["private"], now=0)
    return engine


class Village:
    """The seeded demo village on the server's owner thread, advanced tick by tick on demand.

    ``OwnerThread`` (what ``f09-memory serve`` uses) builds the engine, its metrics collector
    and the host on the owner thread; the loop here runs :func:`run_village` like the demo's
    ``run_demo`` (pumping the host after every tick and while it waits), except that a tick
    only starts once a test allowed it (:meth:`advance`): what the page shows is then
    deterministic. Ticks are 1 s of logical time, so nothing is old enough to be summarized.
    """

    def __init__(self, *, agents: int = 6, seed: int = 12) -> None:
        self.agents = agents
        self.seed = seed
        self._allowed = WARM_TICKS
        self._done = 0
        self._ended = False
        self._cond = threading.Condition()
        self._owner = OwnerThread(lambda: _seeded_demo_engine(seed), self._loop)
        self.host: EngineHost | None = None

    def start(self) -> EngineHost:
        self.host = self._owner.start()
        self.wait_for(WARM_TICKS)
        return self.host

    def _loop(self, host: EngineHost, stop: threading.Event) -> None:
        def between(tick: int) -> None:
            host.pump()
            with self._cond:
                self._done = tick + 1
                self._cond.notify_all()
            while True:
                if stop.is_set():
                    raise _Stopped
                with self._cond:
                    if self._done < self._allowed:
                        return
                host.wait_for_jobs(0.02)
                host.pump()

        try:
            run_village(host.engine, agents=self.agents, ticks=100_000, seed=self.seed,
                        tick_ms=1_000, on_tick=between)
        except _Stopped:
            pass
        finally:
            with self._cond:
                self._ended = True
                self._cond.notify_all()

    def wait_for(self, ticks: int) -> None:
        with self._cond:
            self._cond.wait_for(lambda: self._done >= ticks or self._ended, timeout=20)
            done = self._done
        if self._owner.error is not None:
            raise AssertionError("the simulation's owner thread failed") from self._owner.error
        assert done >= ticks, f"the simulation stopped at tick {done}, before {ticks}"

    def advance(self, ticks: int) -> None:
        """Let the simulation run ``ticks`` more ticks and wait until they are done."""
        with self._cond:
            self._allowed += ticks
            target = self._allowed
        self.wait_for(target)

    def call(self, fn: Callable[[MemoryEngine], T]) -> T:
        """Run ``fn(engine)`` on the owner thread (between two ticks)."""
        assert self.host is not None
        return self.host.call(fn, timeout_s=10.0)

    def stop(self) -> None:
        self._owner.join(10.0)


class LiveServer:
    """The real app on uvicorn, in a thread, on a free port of 127.0.0.1."""

    def __init__(self, host: EngineHost) -> None:
        app = create_app(host, ServerSettings(token=TOKEN))
        self._sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self._sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._sock.bind(("127.0.0.1", 0))
        port = self._sock.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/"
        config = uvicorn.Config(app, log_level="warning", lifespan="off", ws="none",
                                access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._server.run,
                                        kwargs={"sockets": [self._sock]}, name="uvicorn",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()
        for _ in range(500):
            if self._server.started:
                return
            threading.Event().wait(0.01)
        raise AssertionError("uvicorn did not start")

    def stop(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=10)
        self._sock.close()


@pytest.fixture(scope="module")
def village() -> Iterator[Village]:
    sim = Village()
    try:
        sim.start()
        yield sim
    finally:
        sim.stop()


@pytest.fixture(scope="module")
def server(village: Village) -> Iterator[LiveServer]:
    assert village.host is not None
    live = LiveServer(village.host)
    live.start()
    try:
        yield live
    finally:
        live.stop()


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    executable = _chromium()
    if executable is None:
        pytest.skip("no Chromium executable on PATH (chromium or chromium-browser; the Debian "
                    "package `chromium`): the Memory Viewer's browser test needs one")
    with sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=executable,
                                      args=["--no-sandbox", "--headless=new"])
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture
def page(browser: Browser, server: LiveServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1600, "height": 1000})
    context.set_default_timeout(TIMEOUT_MS)
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda exc: errors.append(str(exc)))
    pg.goto(server.url)
    expect(pg.get_by_test_id("agent-item").first).to_be_visible()
    try:
        yield pg
    finally:
        context.close()
    assert errors == [], f"the page raised: {errors}"


def _open_agent(pg: Page, agent: str = AGENT) -> None:
    pg.locator(f'[data-testid="agent-item"][data-agent-id="{agent}"]').click()
    expect(pg.get_by_test_id("records-agent")).to_contain_text(agent)
    expect(pg.get_by_test_id("record-row").first).to_be_visible()


def _rows(pg: Page) -> Any:
    return pg.get_by_test_id("record-row")


# --------------------------------------------------------------------------------- tests
def test_agents_list_and_records_by_layer(page: Page, village: Village) -> None:
    agents = page.get_by_test_id("agent-item")
    expected = village.call(lambda e: {a: e.count(a) for a in e.agents()})
    expect(agents).to_have_count(len(expected))
    shown = {agents.nth(i).get_attribute("data-agent-id"):
             agents.nth(i).get_by_test_id("agent-count").inner_text()
             for i in range(agents.count())}
    assert shown == {agent: f"{n:,}" for agent, n in expected.items()}

    _open_agent(page)
    groups = page.get_by_test_id("layer-group")
    assert groups.count() >= 1
    layers = [groups.nth(i).get_attribute("data-layer") for i in range(groups.count())]
    assert "episodic" in layers
    assert len(layers) == len(set(layers))  # one group per layer
    rows = _rows(page)
    expect(rows).to_have_count(100)
    for i in (0, 50, 99):  # every row sits in its layer's group
        row = rows.nth(i)
        layer = row.get_attribute("data-layer")
        record_id = row.get_attribute("data-record-id")
        group = page.locator(f'[data-testid="layer-group"][data-layer="{layer}"]')
        assert group.locator(f'[data-record-id="{record_id}"]').count() == 1
    # importance and recency bars on every row
    assert page.locator('[data-testid="record-row"] [aria-label="importance"]').count() == 100
    assert page.locator('[data-testid="record-row"] [aria-label="recency"]').count() == 100


def test_paging_through_records(page: Page) -> None:
    _open_agent(page)
    page.get_by_test_id("page-size").select_option("50")
    rows = _rows(page)
    expect(rows).to_have_count(50)
    info = page.get_by_test_id("page-info")
    expect(info).to_have_attribute("data-to", "50")
    total = int(info.get_attribute("data-total") or 0)
    assert total > PADDING
    assert info.inner_text() == f"1\N{EN DASH}50 of {total:,}"
    first_page = {rows.nth(i).get_attribute("data-record-id") for i in range(50)}
    page.get_by_test_id("page-next").click()
    expect(info).to_have_attribute("data-from", "51")
    expect(info).to_have_attribute("data-to", "100")
    expect(rows).to_have_count(50)
    second_page = {rows.nth(i).get_attribute("data-record-id") for i in range(50)}
    assert not first_page & second_page
    page.get_by_test_id("page-prev").click()
    expect(info).to_have_attribute("data-from", "1")
    expect(page.get_by_test_id("page-prev")).to_be_disabled()


def test_two_thousand_records_page_by_page(page: Page) -> None:
    _open_agent(page, BULK)
    page.get_by_test_id("page-size").select_option("500")
    rows = _rows(page)
    expect(rows).to_have_count(500)
    info = page.get_by_test_id("page-info")
    expect(info).to_have_attribute("data-total", str(BULK_RECORDS))
    for start in (501, 1001, 1501):
        page.get_by_test_id("page-next").click()
        expect(info).to_have_attribute("data-from", str(start))
    expect(info).to_have_attribute("data-to", str(BULK_RECORDS))
    expect(rows).to_have_count(500)
    oldest = page.get_by_test_id("record-content").filter(has_text="Ledger line 0:")
    expect(oldest).to_have_count(1)  # newest first: the first stored is on the last page
    expect(page.get_by_test_id("page-next")).to_be_disabled()
    # an explain over 2k candidates shows them 100 at a time
    page.get_by_test_id("explain-submit").click()
    candidates = page.get_by_test_id("candidate-row")
    expect(candidates).to_have_count(100)
    listed = int(page.get_by_test_id("candidates-table").get_attribute("data-total") or 0)
    assert listed >= 1_200  # every candidate, scored or excluded (dialog: no spatial layer)
    more = page.get_by_test_id("candidates-more")
    expect(more).to_contain_text(f"{listed - 100:,} left")
    more.click()
    expect(candidates).to_have_count(200)


def test_hostile_content_is_shown_as_text(browser: Browser, server: LiveServer) -> None:
    # No Content-Security-Policy here: an element made from the content would run its code.
    context = browser.new_context(bypass_csp=True)
    context.set_default_timeout(TIMEOUT_MS)
    try:
        pg = context.new_page()
        pg.goto(server.url)
        _open_agent(pg)
        cell = pg.get_by_test_id("record-content").filter(has_text="onerror")
        expect(cell).to_have_count(1)
        assert cell.text_content() == HOSTILE
        pg.get_by_test_id("search-input").fill("onerror img")
        pg.get_by_test_id("search-submit").click()
        expect(pg.get_by_test_id("search-result").first).to_be_visible()
        pg.get_by_test_id("explain-submit").click()
        expect(pg.get_by_test_id("candidate-row").first).to_be_visible()
        assert pg.locator("img").count() == 0
        assert pg.locator("b").count() == 0  # the tag "<b>tag</b>" is text too
        assert pg.evaluate("() => window.__viewerPwned === undefined")
        assert pg.get_by_text("<b>tag</b>").count() >= 1
    finally:
        context.close()


def test_search(page: Page) -> None:
    _open_agent(page)
    page.get_by_test_id("search-input").fill("barn grain")
    page.get_by_test_id("search-submit").click()
    results = page.get_by_test_id("search-result")
    expect(results.first).to_be_visible()
    assert 1 <= results.count() <= 20
    assert "grain" in results.first.inner_text()
    expect(page.get_by_test_id("search-info")).to_contain_text(AGENT)


def test_explain_shows_candidates_and_score_bars(page: Page, village: Village) -> None:
    _open_agent(page)
    page.get_by_test_id("explain-purpose").select_option("reasoning")
    page.get_by_test_id("explain-strategy").select_option("importance")
    page.get_by_test_id("explain-max-tokens").fill("200")
    page.get_by_test_id("explain-query").fill("grain")
    page.get_by_test_id("explain-submit").click()
    rows = page.get_by_test_id("candidate-row")
    expect(rows.first).to_be_visible()
    assert rows.count() == min(100, int(page.get_by_test_id("explain-candidates").inner_text()))
    assert page.locator('[data-testid="candidate-row"][data-included="true"]').count() >= 1
    first = rows.first
    assert first.locator("td").first.inner_text() == "1"  # rank order
    assert first.locator(".seg").count() >= 2  # the score terms
    # some were left out by the small budget, with their reason
    expect(page.locator('[data-testid="candidate-row"][data-excluded="budget"]').first).to_be_visible()
    # the records table now carries score bars
    expect(page.locator('[data-testid="record-row"] [aria-label="score"]').first).to_be_visible()


def test_redaction_toggle(page: Page, server: LiveServer) -> None:
    toggle = page.get_by_test_id("redaction-toggle")
    expect(toggle).to_have_attribute("data-state", "on")
    _open_agent(page)
    secret_row = page.get_by_test_id("record-content").filter(has_text="key holder")
    expect(secret_row).to_have_count(1)
    assert MARKER not in page.content()
    try:
        toggle.click()
        form = page.get_by_test_id("token-form")
        expect(form).to_be_visible()
        page.get_by_test_id("token-input").fill("not-the-token")
        page.get_by_test_id("token-submit").click()
        error = page.get_by_test_id("redaction-error")
        expect(error).to_be_visible()
        expect(error).to_contain_text("403")  # the problem's status and detail
        expect(error).to_contain_text("not this server's token")
        expect(toggle).to_have_attribute("data-state", "on")
        assert MARKER not in page.content()

        page.get_by_test_id("token-input").fill(TOKEN)
        page.get_by_test_id("token-submit").click()
        expect(toggle).to_have_attribute("data-state", "off")
        expect(form).to_be_hidden()
        expect(secret_row).to_contain_text(MARKER)  # the raw text, as stored

        toggle.click()  # back on, with the token given before
        expect(toggle).to_have_attribute("data-state", "on")
        expect(secret_row).not_to_contain_text(MARKER)
        assert MARKER not in page.content()
    finally:
        page.request.post(f"{server.url}api/redaction", data={"redaction": True},
                          headers={"Authorization": f"Bearer {TOKEN}"})


def test_refresh_highlights_the_diff(page: Page, village: Village) -> None:
    _open_agent(page)
    rows = _rows(page)
    changed_id = rows.nth(2).get_attribute("data-record-id")
    removed_id = rows.nth(3).get_attribute("data-record-id")
    assert changed_id and removed_id

    def edit(engine: MemoryEngine) -> str:
        engine.update(changed_id, importance=0.99)
        engine.forget([removed_id])
        return engine.ingest(AGENT, "A new traveller arrived at the gate at dusk.").id

    village.advance(2)
    added_id = village.call(edit)
    village.advance(2)
    page.get_by_test_id("refresh").click()
    summary = page.get_by_test_id("diff-summary")
    expect(summary).to_be_visible()
    expect(page.locator(f'[data-record-id="{added_id}"]')).to_have_attribute("data-diff", "added")
    expect(page.locator(f'[data-record-id="{changed_id}"]')).to_have_attribute(
        "data-diff", "changed")
    expect(page.locator(f'[data-record-id="{changed_id}"]')).to_contain_text("importance")
    expect(page.locator(f'[data-record-id="{removed_id}"]')).to_have_count(0)
    expect(page.get_by_test_id("removed-list")).to_contain_text(removed_id)
    expect(page.get_by_test_id("diff-added")).not_to_have_text("+0 added")
    assert int(page.get_by_test_id("diff-removed").inner_text().split()[0][1:]) >= 1

    # a refresh with nothing new clears the marks
    page.get_by_test_id("refresh").click()
    expect(page.get_by_test_id("diff-added")).to_have_text("+0 added")
    expect(page.locator('[data-testid="record-row"][data-diff="added"]')).to_have_count(0)


def test_plot_and_screenshot(page: Page, village: Village, tmp_path: Path) -> None:
    plot = page.get_by_test_id("plot")
    for name in ("p50", "p95", "records"):
        line = plot.locator(f'[data-testid="plot-{name}"]')
        expect(line).to_have_count(1)
        assert int(line.get_attribute("data-points") or 0) >= 2
        points = (line.get_attribute("points") or "").split()
        assert len(points) >= 2 and all("," in p for p in points)
    _open_agent(page)
    page.get_by_test_id("explain-submit").click()
    expect(page.get_by_test_id("candidate-row").first).to_be_visible()
    shot = tmp_path / "viewer.png"
    page.screenshot(path=str(shot))
    assert shot.stat().st_size > 20_000


# ------------------------------------------------------------------ the README screenshot
def _screenshot(out: Path) -> None:  # pragma: no cover - run by hand
    """What ``f09-memory serve --demo`` shows after about 30 s of village, saved to ``out``."""
    executable = _chromium()
    if executable is None:
        raise SystemExit("no chromium on PATH")
    owner = OwnerThread(lambda: demo_engine(42), lambda host, stop: run_demo(
        host, stop, agents=12, seed=42, interval_s=0.2))  # f09-memory serve --demo
    live = LiveServer(owner.start())
    live.start()
    try:
        with sync_playwright() as pw:
            chromium = pw.chromium.launch(executable_path=executable,
                                          args=["--no-sandbox", "--headless=new"])
            pg = chromium.new_page(viewport={"width": 1600, "height": 1000})
            pg.set_default_timeout(TIMEOUT_MS)
            pg.goto(live.url)
            expect(pg.get_by_test_id("agent-item").first).to_be_visible()
            pg.wait_for_timeout(25_000)
            pg.get_by_test_id("refresh").click()
            _open_agent(pg, "npc-003")
            pg.get_by_test_id("search-input").fill("market well")
            pg.get_by_test_id("search-submit").click()
            expect(pg.get_by_test_id("search-result").first).to_be_visible()
            pg.get_by_test_id("explain-query").fill("market")
            pg.wait_for_timeout(2_000)
            pg.get_by_test_id("refresh").click()
            expect(pg.get_by_test_id("diff-summary")).to_be_visible()
            pg.get_by_test_id("explain-submit").click()
            expect(pg.get_by_test_id("candidate-row").first).to_be_visible()
            pg.evaluate("() => window.scrollTo(0, 0)")
            pg.screenshot(path=str(out))
            chromium.close()
        _shrink(out)
    finally:
        live.stop()
        owner.join()


def _shrink(path: Path) -> None:  # pragma: no cover - run by hand
    """Reduce the PNG to 256 colours when Pillow is installed (about a third of the size)."""
    try:
        from PIL import Image
    except ImportError:
        return
    with Image.open(path) as image:
        small = image.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT,
                                              dither=Image.Dither.NONE)
    small.save(path, optimize=True)


if __name__ == "__main__":  # pragma: no cover
    _screenshot(Path(sys.argv[1] if len(sys.argv) > 1 else "docs/viewer.png"))
