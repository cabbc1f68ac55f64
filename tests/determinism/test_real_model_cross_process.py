"""Hashes with the real model (all-MiniLM-L6-v2) are identical across processes.

A subprocess with another PYTHONHASHSEED and this process run the grid world with
``SentenceTransformerEmbedder`` in the asynchronous mode (a worker thread embeds, each tick
applies what came due), then a frame of semantic queries; the state hash and every bundle
hash must be the same in both (one child: loading torch and the model takes most of the
test's few seconds). Like every real-model test it
skips only when ``sentence-transformers`` is not installed: with it installed, a model that
does not load fails the test (the ``minilm`` fixture here, a non-zero exit there).
"""

from __future__ import annotations

import os
import subprocess
import sys
from typing import Any

from f09_memory import RetrievalRequest
from f09_memory.determinism.gridworld import GridWorld, grid_engine, host_loop
from f09_memory.determinism.hashing import bundle_hash

QUERIES = ("who attacked someone", "where can I find food", "a swap of goods",
           "somebody I met near the water")


def scenario(embedder: Any) -> list[str]:
    """State hash first, then every bundle hash, of a small grid world run with ``embedder``."""
    engine = grid_engine(seed=5, embedder=embedder, embedding_mode="async",
                         embedding_latency_ms=2_000)
    world = GridWorld(agents=12, seed=5)
    hashes = []
    for step in host_loop(engine, world, 8, budget_ms=2.0, summarize_every=4):
        hashes.extend(bundle_hash(b) for b in step.bundles)
    now = engine.now + 2_000
    engine.tick(now, budget_ms=2.0)  # the last step's vectors come due
    requests = [RetrievalRequest(agent_id=a, purpose="reasoning", max_tokens=200,
                                 strategy="semantic", query=QUERIES[k % len(QUERIES)])
                for k, a in enumerate(world.ids)]
    hashes.extend(bundle_hash(b) for b in engine.retrieve_many(requests, now=now))
    return [engine.state_hash(), *hashes]


_CHILD = """
import os, runpy, sys
os.environ["HF_HUB_OFFLINE"] = os.environ["TRANSFORMERS_OFFLINE"] = "1"
from f09_memory.embedding import SentenceTransformerEmbedder
scenario = runpy.run_path(sys.argv[1])["scenario"]
print(" ".join(scenario(SentenceTransformerEmbedder(num_threads=1))))
"""


def test_real_model_hashes_are_identical_across_processes(minilm: Any) -> None:
    seed = "7" if os.environ.get("PYTHONHASHSEED") == "4242" else "4242"  # not this process's
    env = {**os.environ, "PYTHONHASHSEED": seed, "OMP_NUM_THREADS": "1"}
    child = subprocess.Popen([sys.executable, "-c", _CHILD, __file__], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, env=env)
    local = scenario(minilm)  # while the child loads the model
    out, err = child.communicate(timeout=300)
    assert 0 == child.returncode, f"the real-model run failed in a subprocess:\n{err}"
    assert local == out.split()
    assert 1 + 8 * 12 + 12 == len(local)
