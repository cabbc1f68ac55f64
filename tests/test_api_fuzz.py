"""Stateful fuzzing of the whole public API with valid and hostile arguments.

A hypothesis state machine drives one engine through generated calls: ingest (one, many,
a crowd's batch, claims), update, forget, retrieve (one, many, with query vectors), the
readers, introspection (snapshot, diff, explain, record_view, stats), tick, pressure, the
two summarization phases, save/load round trips and the memory tools, each argument drawn
from valid values or hostile ones (lone surrogates, huge ints, NaN, wrong types, deep
nesting, oversized strings). After every call:

- only a MemoryEngineError escapes (with a taxonomy code, never echoing a marked secret);
- a rejected call leaves ``state_hash()`` and every id counter unchanged;
- ``engine._check()`` holds.

CI runs a small, derandomized budget (a few seconds); ``F09_FUZZ_EXAMPLES=2000`` runs
thousands of programs.
"""

from __future__ import annotations

import functools
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import numpy as np
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.ingestion.claims import Claim
from f09_memory.testing import ScriptedLLM
from f09_memory.tools import TOOL_INTERNAL_ERROR, ToolContext, execute_tool, execute_tool_json

_T = TypeVar("_T")

EXAMPLES = int(os.environ.get("F09_FUZZ_EXAMPLES", "12"))
SECRET = "SECRETmark"
"""Put in hostile strings: an error message or details holding it echoed raw input."""
DIM = 8
CONFIG = MemoryConfig(episodic_max=24, embedding_dim=DIM, episodic_window=0,
                      summarization_min_interval_ms=0, summarization_batch_size=4,
                      summarization_keep_recent=2, summarization_max_importance=1.0,
                      summarization_timeout_ms=None, dedup_window_ms=50)
AGENTS = ("a", "b", "npc-1")


def _deep(depth: int) -> list[Any]:
    return functools.reduce(lambda inner, _: [inner], range(depth), [])  # depth+1 lists


def _huge_text() -> str:
    return SECRET + "x" * 70_000


def _deep_json() -> str:
    return '{"content": ' + "[" * 50_000 + "]" * 50_000 + "}"


SURROGATES = st.sampled_from([f"{SECRET}\ud800", f"a\udfff{SECRET}", "\udc80"])
HOSTILE_INTS = st.sampled_from([-1, -(2**63), 2**62, 2**63, 10**400, -(10**400)])
FLOATS = st.floats(allow_nan=True, allow_infinity=True)
_HOSTILE = st.one_of(
    st.none(), st.booleans(), HOSTILE_INTS, FLOATS, SURROGATES, st.text(max_size=6),
    st.binary(max_size=4), st.builds(_deep, st.just(500)), st.builds(_huge_text),
    st.just("t" * 300 + SECRET),
    st.lists(st.one_of(st.text(max_size=4), SURROGATES, st.integers()), max_size=3),
    st.dictionaries(st.text(max_size=4), st.one_of(st.integers(), SURROGATES), max_size=2),
    st.just(set(range(3))), st.just(object()),
)
HOSTILE = st.deferred(lambda: _HOSTILE)  # a short repr: hypothesis prints strategies


def rare(valid: st.SearchStrategy[_T]) -> st.SearchStrategy[Any]:
    """Hostile about one time in thirty, else valid: for values nested in items."""
    return st.integers(0, 29).flatmap(lambda i: HOSTILE if i == 0 else valid)


WORDS = st.sampled_from(["smith", "well", "gold", "mill", "rain", "guard", "bread", "river",
                         "fire", "Mara", "Borin", "market"])
CONTENT = st.lists(WORDS, min_size=1, max_size=8).map(" ".join)
AGENT = st.sampled_from(AGENTS)
LAYER = st.sampled_from(["episodic", "semantic", "social", "procedural", "spatial"])
IMPORTANCE = st.one_of(st.none(), st.floats(0.0, 1.0))
TAGS = st.one_of(st.none(), st.lists(WORDS, max_size=3))
TTL = st.one_of(st.none(), st.integers(1, 10**6))
METADATA = st.one_of(
    st.none(), st.fixed_dictionaries({"attributes": st.dictionaries(
        st.sampled_from(["k", "zone", "action", "outcome", "context"]),
        st.one_of(st.integers(-5, 5), WORDS), max_size=3)}),
    st.fixed_dictionaries({"spatial": st.fixed_dictionaries(
        {"x": st.floats(-10, 10), "y": st.floats(-10, 10)})}),
)
DELTA = st.integers(0, 50_000)
"""Valid times are the engine clock plus this (so ticks move forward)."""
PURPOSE = st.sampled_from(["dialog", "reasoning", "navigation", "summary"])
REQUEST = st.fixed_dictionaries(
    {"agentId": rare(AGENT), "purpose": rare(PURPOSE), "maxTokens": rare(st.integers(1, 2_000))},
    optional={"query": rare(CONTENT),
              "limit": rare(st.integers(1, 20)), "tagsAny": rare(st.lists(WORDS, max_size=2)),
              "since": rare(st.integers(0, 10**6)), "strategy": rare(st.sampled_from(
                  ["balanced", "recency", "semantic", "importance"])),
              "pressureState": rare(st.sampled_from(["normal", "throttle", "exhausted"])),
              "position": rare(st.lists(st.floats(-10, 10), min_size=2, max_size=3))})
ITEM = st.one_of(CONTENT, st.fixed_dictionaries(
    {"content": rare(CONTENT)}, optional={"importance": rare(IMPORTANCE), "tags": rare(TAGS),
                                          "layer": rare(LAYER), "ttl": rare(TTL)}))
BATCH_ITEM = st.fixed_dictionaries(
    {"agent_id": rare(AGENT), "content": rare(CONTENT)},
    optional={"importance": rare(IMPORTANCE), "tags": rare(TAGS), "source_event": rare(WORDS)})
POSITION = st.lists(st.floats(-10, 10), min_size=2, max_size=3)
PHYSICS = st.fixed_dictionaries(
    {"kind": rare(st.sampled_from(["movement", "boundary", "collision"])),
     "agent_id": rare(AGENT), "position": rare(POSITION)},
    optional={"contact_class": rare(WORDS), "from_region": rare(WORDS),
              "to_region": rare(WORDS)})
VECTORS = st.one_of(st.none(), st.none(), st.just(np.ones(DIM, np.float32)),
                    st.just(np.ones((2, DIM))))
BAD_VECTORS = st.sampled_from(["abc", [[1.0] * DIM, [1.0]], np.zeros((0, DIM)),
                               np.full(DIM, np.nan), np.ones(DIM + 1), np.ones((2, 2, DIM))])


def counters(engine: MemoryEngine) -> dict[str, int]:
    return {am.agent_id: am.next_key for am in engine._state.store}


class EngineMachine(RuleBasedStateMachine):
    """One engine under generated calls; see the module docstring for what is checked.

    Each rule draws valid arguments, then about half the time replaces one of them (picked
    at random) by a hostile value: most calls either work or fail on exactly one argument.
    """

    def __init__(self) -> None:
        super().__init__()
        self.engine = MemoryEngine(CONFIG, seed=3)
        self.ids: list[str] = []
        self.tasks: list[str] = []
        self.folder = tempfile.TemporaryDirectory()

    def teardown(self) -> None:
        self.folder.cleanup()

    # ------------------------------------------------------------------ helpers
    def args(self, data: st.DataObject, **strategies: st.SearchStrategy[Any]) -> dict[str, Any]:
        """Draw each argument; then maybe spoil one. ``now`` is drawn as a clock delta."""
        drawn = {name: data.draw(strategy, label=name) for name, strategy in strategies.items()}
        if "now" in drawn:
            drawn["now"] += self.engine.now
        spoil: bool = data.draw(st.booleans(), label="spoil")
        if drawn and spoil:
            name = data.draw(st.sampled_from(sorted(drawn)), label="spoiled")
            drawn[name] = data.draw(HOSTILE, label=f"hostile {name}")
        return drawn

    def attempt(self, call: Callable[[], _T]) -> _T | None:
        """Run ``call``; a rejection must be a clean MemoryEngineError that changed nothing."""
        engine = self.engine
        before, keys = engine.state_hash(), counters(engine)
        try:
            return call()
        except MemoryEngineError as exc:
            assert isinstance(exc.code, ErrorCode)
            assert SECRET not in exc.message, exc.message
            assert SECRET not in repr(exc.details), exc.details
            assert before == engine.state_hash(), f"rejected call changed the state: {exc}"
            assert keys == counters(engine), "rejected call moved an id counter"
            return None
        finally:
            engine._check()

    # ------------------------------------------------------------------ writing
    @rule(data=st.data())
    def ingest(self, data: st.DataObject) -> None:
        a = self.args(data, agent=AGENT, content=CONTENT, layer=LAYER, importance=IMPORTANCE,
                      tags=TAGS, metadata=METADATA, ttl=TTL, flagged=st.booleans(),
                      source_event=st.one_of(st.none(), WORDS), now=DELTA)
        agent, content = a.pop("agent"), a.pop("content")
        rec = self.attempt(lambda: self.engine.ingest(agent, content, **a))
        if rec is not None:
            self.ids.append(rec.id)

    @rule(data=st.data())
    def ingest_many(self, data: st.DataObject) -> None:
        a = self.args(data, agent=AGENT, items=st.lists(ITEM, max_size=5), now=DELTA)
        recs = self.attempt(lambda: self.engine.ingest_many(a["agent"], a["items"],
                                                            now=a["now"]))
        if recs is not None:
            self.ids.extend(recs.ids)

    @rule(data=st.data())
    def ingest_batch(self, data: st.DataObject) -> None:
        a = self.args(data, items=st.lists(BATCH_ITEM, max_size=6), now=DELTA)
        recs = self.attempt(lambda: self.engine.ingest_batch(a["items"], now=a["now"]))
        if recs is not None:
            self.ids.extend(recs.ids)

    @rule(data=st.data())
    def ingest_physics(self, data: st.DataObject) -> None:
        a = self.args(data, events=st.lists(PHYSICS, max_size=4), now=DELTA)
        recs = self.attempt(lambda: self.engine.ingest_physics(a["events"], now=a["now"]))
        if recs is not None:
            self.ids.extend(recs.ids)

    @rule(data=st.data())
    def nearby(self, data: st.DataObject) -> None:
        a = self.args(data, agent=AGENT, position=POSITION, radius=st.floats(0, 30),
                      k=st.integers(1, 5), layer=st.one_of(st.none(), LAYER), now=DELTA)
        self.attempt(lambda: list(self.engine.nearby(a.pop("agent"), a.pop("position"), **a)))

    @rule(data=st.data())
    def ingest_claim(self, data: st.DataObject) -> None:
        a = self.args(data, agent=AGENT, content=CONTENT, subject=WORDS, value=WORDS,
                      scope=st.sampled_from(["global", "temporal"]),
                      valid_to=st.integers(10**6, 10**7), now=DELTA)
        out = self.attempt(lambda: self.engine.ingest_claim(
            a["agent"], a["content"], Claim(a["subject"], "likes", a["value"],
                                            scope=a["scope"], valid_to=a["valid_to"]),
            now=a["now"]))
        if out is not None:
            self.ids.append(out.record.id)

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def update(self, data: st.DataObject) -> None:
        a = self.args(data, record_id=st.sampled_from(self.ids), importance=IMPORTANCE,
                      tags=TAGS, content=st.one_of(st.none(), CONTENT))
        self.attempt(lambda: self.engine.update(a.pop("record_id"), **a))

    @precondition(lambda self: bool(self.ids))
    @rule(data=st.data())
    def forget(self, data: st.DataObject) -> None:
        if data.draw(st.booleans(), label="by agent"):
            a = self.args(data, agent_id=AGENT)
            self.attempt(lambda: self.engine.forget(agent_id=a["agent_id"]))
        else:
            a = self.args(data, ids=st.lists(st.sampled_from(self.ids), max_size=3))
            self.attempt(lambda: self.engine.forget(a["ids"]))

    # ------------------------------------------------------------------ reading
    @rule(data=st.data())
    def retrieve(self, data: st.DataObject) -> None:
        a = self.args(data, request=REQUEST, now=DELTA,
                      query_vectors=st.one_of(VECTORS, VECTORS, BAD_VECTORS))
        self.attempt(lambda: self.engine.retrieve(a.pop("request"), **a))

    @rule(data=st.data())
    def retrieve_many(self, data: st.DataObject) -> None:
        a = self.args(data, requests=st.lists(REQUEST, max_size=3), now=DELTA)
        self.attempt(lambda: self.engine.retrieve_many(a["requests"], now=a["now"]))

    @rule(data=st.data())
    def readers(self, data: st.DataObject) -> None:
        engine = self.engine
        a = self.args(data, agent=AGENT, k=st.integers(0, 10),
                      layer=st.one_of(st.none(), LAYER),
                      record_id=st.sampled_from(self.ids or ["a:0000000000"]))
        self.attempt(lambda: engine.recent(a["agent"], a["k"], a["layer"]))
        self.attempt(lambda: engine.records(a["agent"], a["layer"]))
        self.attempt(lambda: engine.count(a["agent"], a["layer"]))
        self.attempt(lambda: engine.get(a["record_id"]))
        self.attempt(lambda: engine.procedures(a["agent"], k=a["k"], min_support=1))
        assert (engine.now, engine.pressure) is not None
        assert sorted(engine.agents()) == engine.agents()
        self.attempt(lambda: engine.summarization.pending())

    @rule(data=st.data())
    def introspect(self, data: st.DataObject) -> None:
        intro = self.engine.introspection
        a = self.args(data, request=REQUEST, now=DELTA, agent=st.one_of(st.none(), AGENT),
                      layer=st.one_of(st.none(), LAYER),
                      limit=st.one_of(st.none(), st.integers(1, 30)), offset=st.integers(0, 40),
                      redact=st.booleans(), since=st.integers(0, intro.version + 1),
                      record_id=st.sampled_from(self.ids or ["a:0000000000"]))
        before = self.engine.state_hash()  # pure reads, whether they succeed or not
        self.attempt(lambda: intro.snapshot(a["agent"], layer=a["layer"], limit=a["limit"],
                                            offset=a["offset"], redact=a["redact"]))
        self.attempt(lambda: intro.diff(a["since"], a["agent"], redact=a["redact"]))
        self.attempt(lambda: intro.explain(a["request"], now=a["now"],
                                           redact=a["redact"]).candidates)
        self.attempt(lambda: intro.record_view(a["record_id"], redact=a["redact"]))
        self.attempt(intro.stats)
        assert before == self.engine.state_hash()

    # ------------------------------------------------------------------ maintenance
    @rule(data=st.data())
    def tick(self, data: st.DataObject) -> None:
        a = self.args(data, now=DELTA, budget_ms=st.one_of(st.none(), st.floats(0.01, 5.0)))
        self.attempt(lambda: self.engine.tick(**a))

    @rule(data=st.data())
    def set_pressure(self, data: st.DataObject) -> None:
        a = self.args(data, state=st.sampled_from(["normal", "soft", "throttle", "exhausted"]))
        self.attempt(lambda: self.engine.set_pressure(a["state"]))

    @rule(data=st.data())
    def summarization_request_and_poll(self, data: st.DataObject) -> None:
        summarization = self.engine.summarization
        a = self.args(data, agent_id=AGENT, now=DELTA)
        self.attempt(lambda: summarization.request(**a))
        a = self.args(data, now=DELTA)
        tasks = self.attempt(lambda: summarization.poll(**a))
        self.tasks.extend(t.id for t in tasks or ())

    @precondition(lambda self: bool(self.tasks))
    @rule(data=st.data(), finish=st.sampled_from(["complete", "fail", "error"]))
    def summarization_finish(self, data: st.DataObject, finish: str) -> None:
        a = self.args(data, task_id=st.sampled_from(self.tasks), text=st.one_of(
            st.just("Mara traded gold at the market by the mill with Borin."), CONTENT,
            st.sampled_from([f"Mara traded gold {SECRET}\ud800 at the mill.", "", "ok"])))
        summarization = self.engine.summarization
        if finish == "complete":
            self.attempt(lambda: summarization.complete(a["task_id"], a["text"]))
        elif finish == "fail":
            self.attempt(lambda: summarization.fail(a["task_id"], a["text"]))
        else:
            self.attempt(lambda: summarization.complete_after_error(a["task_id"], a["text"]))

    @rule(data=st.data())
    def summarize_pending(self, data: st.DataObject) -> None:
        reply = data.draw(st.one_of(CONTENT, st.sampled_from(["", "\udc80 Mara and Borin"])))
        a = self.args(data, now=DELTA)
        self.attempt(lambda: self.engine.summarize_pending(ScriptedLLM([reply]), **a))

    # ------------------------------------------------------------------ persistence, tools
    @rule(data=st.data())
    def save_and_load(self, data: st.DataObject) -> None:
        folder = Path(self.folder.name)
        # Never a generic hostile string: it would name a file outside the temporary folder.
        path = data.draw(st.one_of(
            st.sampled_from([folder / "s.f09", str(folder / "t.f09"), folder / "s.f09"]),
            st.sampled_from([folder / "missing" / "x.f09", folder, folder / "a\x00b",
                             folder / f"{SECRET}\udc80", None, 5, b"x.f09", ["x"]])),
            label="path")
        written = self.attempt(lambda: self.engine.save(path))
        if written is not None:
            loaded = MemoryEngine.load(written)
            assert self.engine.state_hash() == loaded.state_hash()
            loaded._check()
            self.engine = loaded

    @rule(data=st.data(), name=st.sampled_from(["memory_write", "memory_search"]))
    def tool_call(self, data: st.DataObject, name: str) -> None:
        arguments = st.one_of(
            st.fixed_dictionaries({"content": rare(CONTENT)},
                                  optional={"keywords": rare(st.lists(WORDS, max_size=3))}),
            st.fixed_dictionaries({"query": rare(CONTENT)},
                                  optional={"limit": rare(st.integers(1, 20))}),
            st.builds(json.dumps, st.fixed_dictionaries({"content": CONTENT})),
            st.builds(_deep_json))
        a = self.args(data, name=st.just(name), arguments=arguments, agent=AGENT, now=DELTA)
        engine = self.engine
        context = self.attempt(lambda: ToolContext(a["agent"], now=a["now"]))
        before = engine.state_hash()
        payload = execute_tool(engine, a["name"], a["arguments"], context)
        json.loads(execute_tool_json(engine, "memory_search", {"query": "gold"}, context))
        if not payload["ok"]:
            assert TOOL_INTERNAL_ERROR != payload["error"]["code"], payload
            assert SECRET not in payload["error"]["message"]
            assert before == engine.state_hash()

    @invariant()
    def invariants_hold(self) -> None:
        self.engine._check()


EngineMachine.TestCase.settings = settings(
    max_examples=EXAMPLES, stateful_step_count=25, derandomize=True, database=None,
    deadline=None, print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                           HealthCheck.filter_too_much],
)
TestEngineFuzz = EngineMachine.TestCase
