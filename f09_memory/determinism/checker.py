"""Checking a user's scenario for determinism across processes and a save/load.

A *scenario* is a factory ``make(seed) -> step`` where ``step(engine, tick)`` plays one
tick on the engine and returns that tick's bundles (or ``None``). Both the factory and the
optional engine factory ``engine(seed) -> MemoryEngine`` are named ``"module:attribute"``
(or given as importable module-level callables), because each run happens in a fresh
interpreter:

- :func:`check_determinism` runs the scenario for ``ticks`` ticks in ``processes``
  interpreters, each with its own ``PYTHONHASHSEED``; the last one also saves the engine
  at a tick drawn from the seed and goes on with the loaded copy. Every run records, per
  tick, the engine's ``state_hash`` and each bundle's hash.
- The traces are compared with the first run's. At the first tick where one differs, the
  two runs are replayed to that tick and their full states (every record, the snapshot
  manifest and its arrays) and bundles compared, to name the agent, the record and the
  field that diverged (:class:`Divergence`).

:func:`assert_deterministic` raises ``AssertionError`` with the report (the pytest
plugin's fixture); ``f09-memory determinism`` runs the same check from a shell. Run as
``python -m f09_memory.determinism.checker`` it is the child process.
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from f09_memory.determinism.hashing import BundleHasher
from f09_memory.engine import MemoryEngine
from f09_memory.errors import InputInvalidError
from f09_memory.schema.retrieval import RetrievedBundle

__all__ = [
    "BUILTIN_SCENARIO",
    "DeterminismError",
    "DeterminismReport",
    "Divergence",
    "ScenarioRef",
    "Step",
    "assert_deterministic",
    "check_determinism",
    "village",
]

Step = Callable[[MemoryEngine, int], Iterable[RetrievedBundle] | None]
"""One tick of a scenario: plays tick ``tick`` on ``engine``, returns its bundles."""

ScenarioRef = str | Callable[[int], Step]
"""A scenario factory, ``"module:attribute"`` or an importable module-level callable."""

BUILTIN_SCENARIO = "f09_memory.determinism.checker:village"
"""The seeded village (50 agents unless ``F09_VILLAGE_AGENTS`` says otherwise)."""


def village(seed: int) -> Step:
    """The built-in scenario: the seeded village of :mod:`~f09_memory.determinism.scenario`.

    Its size comes from ``F09_VILLAGE_AGENTS`` (default 50), read in the child process.
    """
    from f09_memory.determinism.scenario import Village

    return Village(int(os.environ.get("F09_VILLAGE_AGENTS", "50")), seed)


@dataclass(frozen=True)
class Divergence:
    """Where two runs of one scenario first differ.

    ``kind`` is ``"state"`` (the engine's state hash) or ``"retrieval"`` (a bundle);
    ``agent``, ``record`` and ``field`` name what differs as precisely as the comparison
    could tell (``field`` may be a snapshot path such as ``manifest.clock`` or an array
    such as ``table.social.trust`` when the difference is outside the records).
    """

    tick: int
    kind: str
    hash_seed: int
    save_load_tick: int | None
    agent: str | None = None
    record: str | None = None
    field: str | None = None
    expected: Any = None
    actual: Any = None

    def describe(self) -> str:
        """One paragraph for a test failure or a shell."""
        where = f"the process with PYTHONHASHSEED={self.hash_seed}"
        if self.save_load_tick is not None:
            where += f" (saved and loaded after tick {self.save_load_tick})"
        what = "state hash" if self.kind == "state" else "retrieval"
        text = f"{what} diverged at tick {self.tick} in {where}"
        parts = [f"agent {self.agent!r}" if self.agent is not None else "",
                 f"record {self.record!r}" if self.record is not None else "",
                 f"field {self.field!r}" if self.field is not None else ""]
        named = ", ".join(p for p in parts if p)
        if named:
            text += f": {named}"
        if self.field is not None:
            text += f"; first run: {_short(self.expected)}, this run: {_short(self.actual)}"
        return text


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:197] + "..."


@dataclass
class DeterminismReport:
    """The outcome of :func:`check_determinism`."""

    scenario: str
    ticks: int
    seeds: tuple[int, ...]
    hash_seeds: tuple[int, ...]
    save_load_ticks: dict[int, int | None] = field(default_factory=dict)
    """Per engine seed, the tick after which the last process saved and loaded."""
    final_state_hashes: dict[int, str] = field(default_factory=dict)
    divergences: list[Divergence] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Whether every run agreed at every tick."""
        return not self.divergences

    def describe(self) -> str:
        """A short report: what ran and, per divergence, where."""
        head = (f"{self.scenario}: {self.ticks} ticks, seeds {list(self.seeds)}, "
                f"PYTHONHASHSEED {list(self.hash_seeds)}, save/load after tick "
                f"{self.save_load_ticks}")
        if self.ok:
            return head + ": deterministic"
        return "\n".join([head + ": NOT deterministic",
                          *(d.describe() for d in self.divergences)])


def _ref(value: ScenarioRef | Callable[[int], MemoryEngine] | None, what: str) -> str | None:
    if value is None or isinstance(value, str):
        if isinstance(value, str) and ":" not in value:
            raise InputInvalidError(f"{what} must be 'module:attribute'",
                                    details={"field": what})
        return value
    module, name = getattr(value, "__module__", None), getattr(value, "__qualname__", "")
    if not module or module == "__main__" or "<" in name:
        raise InputInvalidError(
            f"{what} must be importable by a fresh interpreter: a module-level function or "
            "class of an importable module (not a lambda, a local or a __main__ object), or "
            "a 'module:attribute' string", details={"field": what})
    return f"{module}:{name}"


def _load(ref: str) -> Any:
    module, _, name = ref.partition(":")
    target: Any = importlib.import_module(module)
    for part in name.split("."):
        target = getattr(target, part)
    return target


def save_load_tick(seed: int, ticks: int) -> int | None:
    """The tick after which the save/load run reloads its engine (drawn from ``seed``)."""
    if ticks < 2:
        return None
    return int(np.random.default_rng([seed, ticks]).integers(0, ticks - 1))


def check_determinism(
    scenario: ScenarioRef = BUILTIN_SCENARIO,
    *,
    ticks: int = 200,
    seeds: Sequence[int] = (0,),
    processes: int = 3,
    engine: str | Callable[[int], MemoryEngine] | None = None,
    save_load: bool = True,
    timeout_s: float = 600.0,
    env: dict[str, str] | None = None,
) -> DeterminismReport:
    """Run ``scenario`` in ``processes`` interpreters per seed and compare every tick.

    Args:
        scenario: The scenario factory (``"module:attribute"`` or an importable callable).
        ticks: Ticks to play.
        seeds: Engine and scenario seeds; each is checked on its own.
        processes: Interpreters per seed (>= 2), with PYTHONHASHSEED 0, 1, ...
        engine: An engine factory ``engine(seed)``; default ``MemoryEngine(seed=seed)``.
        save_load: Whether the last process saves and loads its engine mid-run.
        timeout_s: Per process.
        env: Extra environment variables for the child processes.

    Raises:
        InputInvalidError: A reference is not importable by name, or a count is out of range.
        RuntimeError: A child process failed (its stderr is included).
    """
    scenario_ref = _ref(scenario, "scenario")
    engine_ref = _ref(engine, "engine")
    assert scenario_ref is not None
    if isinstance(ticks, bool) or not isinstance(ticks, int) or ticks < 1:
        raise InputInvalidError("ticks must be a positive int", details={"field": "ticks"})
    if isinstance(processes, bool) or not isinstance(processes, int) or processes < 2:
        raise InputInvalidError("processes must be an int >= 2 (one run proves nothing)",
                                details={"field": "processes"})
    seeds = tuple(seeds)
    if not seeds or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in seeds):
        raise InputInvalidError("seeds must be non-negative ints", details={"field": "seeds"})
    hash_seeds = tuple(range(processes))
    report = DeterminismReport(scenario_ref, ticks, seeds, hash_seeds)
    for seed in seeds:
        reload_at = save_load_tick(seed, ticks) if save_load else None
        report.save_load_ticks[seed] = reload_at
        runs = [_Run(scenario_ref, engine_ref, seed, ticks, hash_seed,
                     reload_at if hash_seed == hash_seeds[-1] else None, env, timeout_s)
                for hash_seed in hash_seeds]
        with ThreadPoolExecutor(max_workers=min(len(runs), os.cpu_count() or 1)) as pool:
            traces = list(pool.map(lambda run: run.trace(), runs))
        report.final_state_hashes[seed] = traces[0][-1]["state"]
        first = _first_divergence(runs, traces)
        if first is not None:
            report.divergences.append(_explain(*first))
    return report


class DeterminismError(AssertionError):
    """A scenario diverged: the message is the report; ``report`` holds the details."""

    def __init__(self, report: DeterminismReport) -> None:
        super().__init__(report.describe())
        self.report = report


def assert_deterministic(scenario: ScenarioRef = BUILTIN_SCENARIO, **kwargs: Any
                         ) -> DeterminismReport:
    """:func:`check_determinism`, raising :class:`DeterminismError` on divergence.

    Takes the keyword arguments of :func:`check_determinism`.

    Raises:
        DeterminismError: An ``AssertionError`` whose message names the first divergent
            tick, agent, record and field per seed.
    """
    report = check_determinism(scenario, **kwargs)
    if not report.ok:
        raise DeterminismError(report)
    return report


@dataclass(frozen=True)
class _Run:
    scenario: str
    engine: str | None
    seed: int
    ticks: int
    hash_seed: int
    reload_at: int | None
    env: dict[str, str] | None
    timeout_s: float

    def command(self, *extra: str) -> list[str]:
        cmd = [sys.executable, "-m", "f09_memory.determinism.checker", "--scenario",
               self.scenario, "--seed", str(self.seed), "--ticks", str(self.ticks)]
        if self.engine is not None:
            cmd += ["--engine", self.engine]
        if self.reload_at is not None:
            cmd += ["--reload-at", str(self.reload_at)]
        return [*cmd, *extra]

    def run(self, *extra: str) -> str:
        env = dict(os.environ, **(self.env or {}), PYTHONHASHSEED=str(self.hash_seed))
        proc = subprocess.run(self.command(*extra), env=env, capture_output=True, text=True,
                              timeout=self.timeout_s, check=False)
        if proc.returncode != 0:
            raise RuntimeError(f"scenario run failed ({proc.returncode}): {proc.stderr[-3000:]}")
        return proc.stdout

    def trace(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.run().splitlines() if line.startswith("{")]


def _first_divergence(runs: list[_Run], traces: list[list[dict[str, Any]]]
                      ) -> tuple[_Run, _Run, int, str, str | None] | None:
    """(reference run, divergent run, tick, kind, agent) of the earliest divergence."""
    best: tuple[_Run, _Run, int, str, str | None] | None = None
    for run, trace in zip(runs[1:], traces[1:], strict=True):
        for ref, got in zip(traces[0], trace, strict=True):
            if ref == got:
                continue
            tick = int(ref["tick"])
            if ref["state"] != got["state"]:  # the cause; bundles usually follow
                found = (runs[0], run, tick, "state", None)
            else:
                agent = next((a or None for (a, h), (_, g) in zip(
                    ref["bundles"], got["bundles"], strict=False) if h != g), None)
                found = (runs[0], run, tick, "retrieval", agent)
            if best is None or tick < best[2]:
                best = found
            break
    return best


def _explain(ref: _Run, other: _Run, tick: int, kind: str, agent: str | None) -> Divergence:
    base = Divergence(tick, kind, other.hash_seed, other.reload_at)
    with tempfile.TemporaryDirectory(prefix="f09-determinism-") as tmp:
        dumps = []
        for i, run in enumerate((ref, other)):
            file = Path(tmp) / f"run{i}.json"
            run.run("--dump-at", str(tick), "--dump", str(file))
            dumps.append(json.loads(file.read_text(encoding="utf-8")))
    a, b = dumps
    if kind == "retrieval":
        for (agent_a, bundle_a), (_, bundle_b) in zip(a["bundles"], b["bundles"], strict=False):
            if bundle_a != bundle_b:
                record, path, x, y = _first_difference(bundle_a, bundle_b)
                return replace(base, agent=agent_a or None, record=record, field=path,
                                  expected=x, actual=y)
        return replace(base, agent=agent)
    for agent_id in sorted(set(a["records"]) | set(b["records"])):
        ra, rb = a["records"].get(agent_id), b["records"].get(agent_id)
        if ra != rb:
            if ra is None or rb is None:
                return replace(base, agent=agent_id, field="(agent present in one run)")
            record, path, x, y = _first_difference({"records": ra}, {"records": rb})
            return replace(base, agent=agent_id, record=record, field=path,
                              expected=x, actual=y)
    _, path, x, y = _first_difference({"manifest": a["manifest"], "arrays": a["arrays"]},
                                      {"manifest": b["manifest"], "arrays": b["arrays"]})
    return replace(base, field=path, expected=x, actual=y)


def _first_difference(a: Any, b: Any, path: str = "", record: str | None = None
                      ) -> tuple[str | None, str, Any, Any]:
    """(record id, dotted path, value a, value b) of the first difference, depth first."""
    if isinstance(a, dict) and isinstance(b, dict):
        record = a.get("id", record) if isinstance(a.get("id"), str) else record
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                return _first_difference(a.get(key), b.get(key),
                                         f"{path}.{key}" if path else str(key), record)
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            if x != y:
                return _first_difference(x, y, f"{path}[{i}]", record)
        if len(a) != len(b):
            return record, f"{path}.length", len(a), len(b)
    return record, path, a, b


# ---------------------------------------------------------------------- the child process
def _state_dump(engine: MemoryEngine, bundles: list[RetrievedBundle]) -> dict[str, Any]:
    from f09_memory.persistence import snapshot

    records = {agent: [r.model_dump(by_alias=True, mode="json")
                       for r in sorted(engine.records(agent), key=lambda r: r.id)]
               for agent in engine.agents()}
    with tempfile.TemporaryDirectory(prefix="f09-dump-") as tmp:
        snap = snapshot.read_snapshot(engine.save(Path(tmp) / "state.f09"))
    manifest = {k: v for k, v in snap.manifest.items() if k != "agents"}
    manifest["agents"] = [{k: v for k, v in a.items() if k != "index"}
                          for a in snap.manifest["agents"]]
    import hashlib

    arrays = {name: hashlib.sha256(np.ascontiguousarray(arr).tobytes()).hexdigest()
              for name, arr in sorted(snap.arrays.items())}
    return {"records": records, "manifest": manifest, "arrays": arrays,
            "bundles": [[_agent_of(b), b.model_dump(by_alias=True, mode="json",
                                                  exclude={"diagnostics": {"time_ms"}})]
                        for b in bundles]}


def _agent_of(bundle: RetrievedBundle) -> str:
    """The agent of a bundle's records (``""`` for an empty bundle)."""
    return bundle.records[0].agent_id if bundle.records else ""


def _child(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="f09_memory.determinism.checker")
    parser.add_argument("--scenario", required=True)
    parser.add_argument("--engine", default=None)
    parser.add_argument("--seed", type=int, required=True)
    parser.add_argument("--ticks", type=int, required=True)
    parser.add_argument("--reload-at", type=int, default=None)
    parser.add_argument("--dump-at", type=int, default=None)
    parser.add_argument("--dump", default=None)
    args = parser.parse_args(argv)
    step: Step = _load(args.scenario)(args.seed)
    engine: MemoryEngine = (_load(args.engine)(args.seed) if args.engine
                            else MemoryEngine(seed=args.seed))
    hasher = BundleHasher()
    out = sys.stdout
    last = args.ticks - 1 if args.dump_at is None else args.dump_at
    with tempfile.TemporaryDirectory(prefix="f09-reload-") as tmp:
        for tick in range(last + 1):
            bundles = list(step(engine, tick) or ())
            if args.dump_at == tick:
                Path(args.dump).write_text(json.dumps(_state_dump(engine, bundles)),
                                           encoding="utf-8")
                return 0
            out.write(json.dumps({"tick": tick, "state": engine.state_hash(),
                                  "bundles": [[_agent_of(b), hasher(b)] for b in bundles]})
                      + "\n")
            if tick == args.reload_at:
                path = engine.save(Path(tmp) / "reload.f09")
                engine = MemoryEngine.load(path, embedder=engine.embedder,
                                           token_counter=engine.counter,
                                           redaction_key=engine.config.redaction_key)
    return 0


if __name__ == "__main__":
    raise SystemExit(_child())
