"""The multi-process determinism harness.

``run_isolated`` runs the village in a fresh interpreter with a chosen ``PYTHONHASHSEED``
and returns its hashes; equal hashes across hash seeds prove nothing depends on ``hash()``
or on set/dict iteration accidents. Run as ``python -m f09_memory.determinism.harness``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from collections.abc import Sequence

__all__ = ["main", "run_isolated"]


def run_isolated(
    *, agents: int, ticks: int, seed: int, hash_seed: int, episodic_max: int = 1200,
    lifecycle: bool = False, timeout_s: float = 300.0,
) -> dict[str, str]:
    """Run the village scenario in a subprocess and return its two hashes.

    Returns ``{"retrieval_hash": ..., "state_hash": ...}``.

    Raises:
        RuntimeError: The subprocess failed (its stderr is included).
    """
    env = dict(os.environ, PYTHONHASHSEED=str(hash_seed))
    cmd = [sys.executable, "-m", "f09_memory.determinism.harness", "--agents", str(agents),
           "--ticks", str(ticks), "--seed", str(seed), "--episodic-max", str(episodic_max)]
    if lifecycle:
        cmd.append("--lifecycle")
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout_s,
                          check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"harness run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    out: dict[str, str] = json.loads(proc.stdout.strip().splitlines()[-1])
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run one scenario and print its hashes as one JSON line."""
    from f09_memory.config.config import MemoryConfig
    from f09_memory.determinism.scenario import (
        LIFECYCLE_CONFIG,
        run_village,
        scripted_village_llm,
    )
    from f09_memory.engine import MemoryEngine

    parser = argparse.ArgumentParser(prog="f09_memory.determinism.harness")
    parser.add_argument("--agents", type=int, default=8)
    parser.add_argument("--ticks", type=int, default=50)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--episodic-max", type=int, default=1200)
    parser.add_argument("--lifecycle", action="store_true",
                        help="summarize (scripted LLM + fallback) and compact during the run")
    args = parser.parse_args(argv)
    overrides = dict(LIFECYCLE_CONFIG) if args.lifecycle else {}
    engine = MemoryEngine(MemoryConfig(episodic_max=args.episodic_max, **overrides),
                          seed=args.seed)
    result = run_village(engine, agents=args.agents, ticks=args.ticks, seed=args.seed,
                         tick_ms=10_000 if args.lifecycle else 1_000,
                         llm=scripted_village_llm() if args.lifecycle else None)
    print(json.dumps(result.hashes(), sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
