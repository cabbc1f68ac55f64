"""``f09-memory``: the command line.

``f09-memory simulate --agents N --ticks T --seed S`` runs the seeded village scenario on the
in-memory engine with a progress bar and prints a summary: records by layer, retrievals,
frame retrieval latency p50/p95 (one retrieve_many for all agents), events emitted, and
the final state hash. The same arguments give the same hashes in every run and process.

Output: a table by default (when stdout is not a terminal it is drawn wide enough that each
64-hex hash stays whole on its line, so ``| grep "state hash"`` works); ``--json`` prints one
JSON object; ``--plain`` prints one ``key=value`` line per metric (``records.<layer>=N``,
``events.<name>=N``). ``f09-memory --version`` prints the installed version.

``f09-memory simulate --shards N`` runs the same village on ``N`` Ray actors
(``f09_memory.distributed``, the ``[ray]`` extra; a local Ray unless ``RAY_ADDRESS`` names a
cluster) and prints the same hashes as the single-process run; with ``--db`` the shards are
durable in that folder.

``f09-memory calibrate-embedder [--embedder hashing|sentence-transformers]`` measures an
embedder's cost per text on this machine and prints the ``tick_costs`` setting for it.

``f09-memory serve (--demo | --db PATH) [--host 127.0.0.1] [--port 8765]`` serves the Memory
Viewer and its HTTP API (``f09_memory.endpoints``; the ``[server]`` extra) for the demo
village or a durable store; see ``f09_memory.endpoints.serve``.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from importlib import metadata
from typing import TYPE_CHECKING

import numpy as np

from f09_memory.config.config import MemoryConfig
from f09_memory.determinism import checker, golden
from f09_memory.determinism.scenario import VillageResult, run_village
from f09_memory.embedding.hashing import HashingEmbedder
from f09_memory.engine import MemoryEngine
from f09_memory.errors import MemoryEngineError
from f09_memory.protocols import EmbeddingProvider
from f09_memory.schema.enums import MemoryLayer

if TYPE_CHECKING:  # the commands that need them import them (a lighter start-up)
    from rich.console import Console

    from f09_memory.distributed.engine import ShardedMemoryEngine

__all__ = ["build_parser", "console", "main", "plain_lines", "version"]

_DIST = "f09-memory"
_PIPE_WIDTH = 160
"""Console width when stdout is not a terminal: the widest row (a 64-hex hash) never folds."""


def version() -> str:
    """The installed version of the ``f09-memory`` distribution.

    Returns:
        The version from the package metadata, or ``"unknown"`` when the package is run
        from a source tree that was never installed.
    """
    try:
        return metadata.version(_DIST)
    except metadata.PackageNotFoundError:
        return "unknown"


def _positive(text: str) -> int:
    value = int(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return value


def _port(text: str) -> int:
    value = int(text)
    if not 1 <= value <= 65_535:
        raise argparse.ArgumentTypeError(f"must be a port number in 1..65535, got {text}")
    return value


def _non_negative(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a non-negative integer, got {text}")
    return value


def _add_serve(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    srv = sub.add_parser("serve", allow_abbrev=False,
                         help="serve the Memory Viewer and its HTTP API (the [server] extra)")
    source = srv.add_mutually_exclusive_group(required=True)
    source.add_argument("--demo", action="store_true",
                        help="run the seeded village simulation live in the background")
    source.add_argument("--db", default=None, metavar="PATH",
                        help="serve an existing durable store (MemoryEngine.open)")
    srv.add_argument("--host", default=None,
                     help="address to bind (127.0.0.1; any other prints a warning)")
    srv.add_argument("--port", type=_port, default=None, help="port to listen on (8765)")
    srv.add_argument("--token-env", default="MEMORY_SERVER_TOKEN", metavar="NAME",
                     help="environment variable holding the bearer token of the redaction "
                          "toggle (MEMORY_SERVER_TOKEN); unset: the toggle is refused")
    srv.add_argument("--allow-host", action="append", default=[], metavar="NAME",
                     help="another host name the server answers to (repeatable; '*': any)")
    srv.add_argument("--agents", type=_positive, default=12, help="demo villagers (12)")
    srv.add_argument("--seed", type=int, default=42, help="demo seed (42)")
    srv.add_argument("--tick-interval-ms", type=_non_negative, default=200,
                     help="demo: wall-clock milliseconds per tick (200)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of ``f09-memory``."""
    parser = argparse.ArgumentParser(prog="f09-memory", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"f09-memory {version()}")
    sub = parser.add_subparsers(dest="command", required=True)
    sim = sub.add_parser("simulate", help="run the seeded village scenario")
    sim.add_argument("--agents", type=_positive, default=50, help="number of agents (50)")
    sim.add_argument("--ticks", type=_positive, default=200, help="number of ticks (200)")
    sim.add_argument("--seed", type=int, default=42, help="scenario and engine seed (42)")
    sim.add_argument("--tick-ms", type=_positive, default=1_000,
                     help="logical milliseconds per tick (1000)")
    sim.add_argument("--budget-ms", type=float, default=2.0,
                     help="maintenance budget per tick in ms of counted work (2.0)")
    sim.add_argument("--from-env", action="store_true",
                     help="read MemoryConfig from MEMORY_* environment variables")
    sim.add_argument("--db", default=None, metavar="PATH",
                     help="run on a durable SQLite store (reopened and continued if it exists)")
    sim.add_argument("--commit", choices=("call", "tick"), default="tick",
                     help="durable mode: commit every call or once per tick (tick)")
    sim.add_argument("--shards", type=_positive, default=None, metavar="N",
                     help="run on N Ray actors (the [ray] extra; --db is then a folder); "
                          "the hashes are the single-process run's")
    output = sim.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true",
                        help="print the summary as one JSON object")
    output.add_argument("--plain", action="store_true",
                        help="print the summary as key=value lines (one per metric)")
    sim.add_argument("--no-progress", action="store_true", help="hide the progress bar")
    cal = sub.add_parser("calibrate-embedder",
                         help="measure an embedder's cost per text in tick work units")
    cal.add_argument("--embedder", choices=("hashing", "sentence-transformers"),
                     default="hashing", help="which embedder to measure (hashing)")
    cal.add_argument("--model", default=None,
                     help="sentence-transformers model name or path (the packaged MiniLM)")
    cal.add_argument("--texts", type=_positive, default=256, help="texts per round (256)")
    cal.add_argument("--batch-size", type=_positive, default=64, help="texts per call (64)")
    cal.add_argument("--work-units-per-ms", type=_positive, default=200_000,
                     help="the engine's work_units_per_ms (200000)")
    det = sub.add_parser(
        "determinism",
        help="check a scenario across processes and a save/load, or the golden hashes")
    det.add_argument("--scenario", default=None, metavar="MODULE:FACTORY",
                     help="scenario factory make(seed) -> step(engine, tick) (the village)")
    det.add_argument("--engine", default=None, metavar="MODULE:FACTORY",
                     help="engine factory engine(seed) -> MemoryEngine (default config)")
    det.add_argument("--ticks", type=_positive, default=200, help="ticks to play (200)")
    det.add_argument("--seeds", default="42", metavar="N[,N...]",
                     help="engine and scenario seeds, comma-separated (42)")
    det.add_argument("--processes", type=_positive, default=3,
                     help="processes per seed, each with its own PYTHONHASHSEED (3)")
    det.add_argument("--no-save-load", action="store_true",
                     help="do not save and load the engine mid-run in the last process")
    golden = det.add_mutually_exclusive_group()
    golden.add_argument("--golden", action="store_true",
                        help="instead: recompute the built-in scenarios' golden hashes and "
                             "compare them with the committed ones")
    golden.add_argument("--update-golden", action="store_true",
                        help="instead: recompute and rewrite the golden hashes")
    _add_serve(sub)
    return parser


def _determinism(args: argparse.Namespace) -> int:
    if args.update_golden:
        for name, hashes in golden.write_golden().items():
            print(f"{name}: stateHash={hashes['stateHash']} "
                  f"retrievalHash={hashes['retrievalHash']}")
        print(f"written: {golden.GOLDEN_PATH}")
        return 0
    if args.golden:
        mismatches = golden.golden_mismatches()
        for line in mismatches:
            print(line)
        print("golden hashes: " + ("differ" if mismatches else "match"))
        return 1 if mismatches else 0
    try:
        seeds = [int(part) for part in args.seeds.split(",") if part.strip()]
    except ValueError:
        print("f09-memory: --seeds must be integers separated by commas", file=sys.stderr)
        return 2
    report = checker.check_determinism(
        args.scenario or checker.BUILTIN_SCENARIO, ticks=args.ticks, seeds=seeds,
        processes=args.processes, engine=args.engine, save_load=not args.no_save_load)
    print(report.describe())
    return 0 if report.ok else 1


def _calibrate(args: argparse.Namespace) -> int:
    from f09_memory.embedding.calibrate import calibrate_embedder, sample_texts

    provider: EmbeddingProvider
    if args.embedder == "hashing":
        provider = HashingEmbedder()
    else:
        from f09_memory.embedding import SentenceTransformerEmbedder

        provider = (SentenceTransformerEmbedder() if args.model is None
                    else SentenceTransformerEmbedder(args.model))
    result = calibrate_embedder(provider, texts=sample_texts(args.texts),
                                batch_size=args.batch_size,
                                work_units_per_ms=args.work_units_per_ms)
    print(f"embedder={provider.version}")
    print(f"usPerText={result.us_per_text:.2f}")
    print(f"unitsPerText={result.units_per_text}")
    print(f'setting: MemoryConfig(tick_costs={{"embed": {result.units_per_text}}})')
    return 0


def _summary(engine: MemoryEngine | ShardedMemoryEngine, result: VillageResult,
             wall_s: float) -> dict[str, object]:
    lat = np.array(result.latencies_ms) if result.latencies_ms else np.zeros(1)
    return {
        "agents": result.agents,
        "ticks": result.ticks,
        "seed": result.seed,
        "ingested": result.ingested,
        "records": {layer.value: engine.count(layer=layer) for layer in MemoryLayer},
        "recordsTotal": engine.count(),
        "retrievals": result.retrievals,
        "frameRetrievalP50Ms": round(float(np.percentile(lat, 50)), 4),
        "frameRetrievalP95Ms": round(float(np.percentile(lat, 95)), 4),
        "events": result.events,
        "retrievalHash": result.retrieval_hash,
        "stateHash": result.state_hash,
        "wallSeconds": round(wall_s, 2),
    }


def plain_lines(summary: dict[str, object]) -> list[str]:
    """The summary as ``key=value`` lines, one per metric (``simulate --plain``).

    Keys are the ``--json`` keys; the nested counts are flattened to ``records.<layer>``
    and ``events.<name>``, in the summary's order. Hashes are printed whole.

    Args:
        summary: The summary ``simulate`` prints.

    Returns:
        The lines, without newlines.
    """
    lines: list[str] = []
    for key, value in summary.items():
        if isinstance(value, dict):
            lines.extend(f"{key}.{name}={n}" for name, n in value.items())
        else:
            lines.append(f"{key}={value}")
    return lines


def _print_table(console: Console, summary: dict[str, object]) -> None:
    from rich.table import Table

    table = Table(title="f09-memory simulate", show_header=True, header_style="bold")
    table.add_column("metric")
    table.add_column("value", overflow="fold")
    for key in ("agents", "ticks", "seed", "shards", "ingested", "recordsTotal"):
        if key in summary:
            table.add_row(key, str(summary[key]))
    records = summary["records"]
    assert isinstance(records, dict)
    for layer, n in records.items():
        table.add_row(f"  records: {layer}", str(n))
    table.add_row("retrievals", str(summary["retrievals"]))
    table.add_row("retrieve_many per frame (all agents) p50 / p95",
                  f"{summary['frameRetrievalP50Ms']} ms / {summary['frameRetrievalP95Ms']} ms")
    events = summary["events"]
    assert isinstance(events, dict)
    table.add_row("events emitted", str(sum(events.values())))
    for name, n in events.items():
        table.add_row(f"  {name}", str(n))
    table.add_row("retrieval hash", str(summary["retrievalHash"]))
    table.add_row("state hash", str(summary["stateHash"]))
    table.add_row("wall time", f"{summary['wallSeconds']} s")
    console.print(table)


_YOUNG_THRESHOLD = 10_000
"""Allocations between two young-generation collections in a CLI run (Python's default is
700): a crowd frame allocates thousands of short-lived objects, and each collection then
visits them again."""


@contextmanager
def _spared_collector() -> Iterator[None]:
    """The garbage collector set for a long run, and set back after it.

    What exists when the run starts (modules, classes, the engine's tables) lives through
    it: ``gc.freeze`` keeps it out of every collection until ``gc.unfreeze``. Young
    collections run every ``_YOUNG_THRESHOLD`` allocations. Memory is still reclaimed
    (reference counting frees almost everything; cycles are still collected). Changes no
    result. A host loop may do the same in its own process.
    """
    threshold = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(_YOUNG_THRESHOLD, *threshold[1:])
    try:
        yield
    finally:
        gc.set_threshold(*threshold)
        gc.unfreeze()


def _terminal() -> Console:
    """The console of the human-readable output (rich is imported only for it)."""
    from rich.console import Console

    console = Console()
    return console if console.is_terminal else Console(width=max(console.width,
                                                                 _PIPE_WIDTH))


@contextmanager
def _progress(console: Console | None, total: int, *,
              disabled: bool) -> Iterator[Callable[[int], None]]:
    """A progress bar of ``total`` ticks on ``console``; yields what advances it.

    No console (machine output) or ``disabled``: no bar, and rich is not imported.
    """
    if console is None or disabled:
        yield lambda _tick: None
        return
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(TextColumn("[bold]simulating"), BarColumn(), MofNCompleteColumn(),
                  TimeElapsedColumn(), console=console, transient=True) as progress:
        task = progress.add_task("ticks", total=total)
        yield lambda _tick: progress.advance(task)


def _simulate(args: argparse.Namespace) -> int:
    config = MemoryConfig.from_env() if args.from_env else MemoryConfig()
    engine: MemoryEngine | ShardedMemoryEngine
    if args.shards is not None:
        from f09_memory.distributed.engine import ShardedMemoryEngine

        engine = ShardedMemoryEngine(config, shards=args.shards, seed=args.seed, path=args.db,
                                     commit=args.commit, hash_bundles=True)
    elif args.db:
        engine = MemoryEngine.open(args.db, config, seed=args.seed, commit=args.commit)
    else:
        engine = MemoryEngine(config, seed=args.seed)
    machine = args.json or args.plain
    console = None if machine else _terminal()
    t0 = time.perf_counter()
    with _progress(console, args.ticks, disabled=args.no_progress) as advance, \
            _spared_collector():
        result = run_village(
            engine, agents=args.agents, ticks=args.ticks, seed=args.seed,
            tick_ms=args.tick_ms, budget_ms=args.budget_ms, on_tick=advance,
        )
    summary = _summary(engine, result, time.perf_counter() - t0)
    if args.shards is not None:
        summary["shards"] = args.shards
    if args.db or args.shards is not None:
        engine.close()
    if args.db:
        summary["db"] = args.db
    if args.json:
        print(json.dumps(summary, sort_keys=True))
    elif args.plain:
        print("\n".join(plain_lines(summary)))
    else:
        assert console is not None
        _print_table(console, summary)
    return 0


def _serve(args: argparse.Namespace) -> int:
    from f09_memory.endpoints import app as endpoints_app

    if not endpoints_app.server_available():
        print(f"f09-memory: serve needs FastAPI and uvicorn: {endpoints_app.INSTALL_HINT}",
              file=sys.stderr)
        return 2
    from f09_memory.endpoints import serve as endpoints_serve
    from f09_memory.endpoints.settings import ServerSettings

    base = ServerSettings()
    bind = base.host if args.host is None else args.host
    port = base.port if args.port is None else args.port
    if args.db is not None and not os.path.isfile(args.db):
        print(f"f09-memory: no database file at {args.db} (make one with "
              "f09-memory simulate --db PATH)", file=sys.stderr)
        return 2
    token = os.environ.get(args.token_env)
    settings = ServerSettings(token=token, host=bind, port=port,
                              allowed_hosts=endpoints_serve.allowed_hosts_for(
                                  bind, args.allow_host))
    if not endpoints_serve.is_loopback(bind):
        print(f"f09-memory: warning: --host {bind} is not a loopback address: anyone who "
              "can reach this machine on that address can read the engine's memory "
              "(redacted unless the token holder turns redaction off)", file=sys.stderr)
    if not settings.token_configured:
        print(f"f09-memory: no token in {args.token_env}: the redaction toggle is refused "
              "(responses stay redacted)", file=sys.stderr)
    return endpoints_serve.serve(bind=bind, port=port, db=args.db, demo=args.demo,
                                 settings=settings, agents=args.agents, seed=args.seed,
                                 interval_s=args.tick_interval_ms / 1000.0)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``f09-memory`` console script; returns the exit code."""
    args = build_parser().parse_args(argv)
    try:
        if args.command == "simulate":
            return _simulate(args)
        if args.command == "calibrate-embedder":
            return _calibrate(args)
        if args.command == "determinism":
            return _determinism(args)
        if args.command == "serve":
            return _serve(args)
    except MemoryEngineError as exc:
        print(f"f09-memory: {exc}", file=sys.stderr)
        return 2
    return 2  # pragma: no cover - argparse rejects unknown commands


def console() -> None:
    """The ``f09-memory`` console script: :func:`main`, then exit with its code.

    Also ``python -m f09_memory.cli``. The process ends right after the command, so what
    it holds is frozen out of the collector first: the interpreter's last collection would
    otherwise walk the engine's objects only for them to be freed anyway (about 0.15 s
    after ``simulate``).
    """
    code = main()
    gc.freeze()
    sys.exit(code)


if __name__ == "__main__":
    console()
