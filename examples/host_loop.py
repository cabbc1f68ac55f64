"""A small game's host loop around the f09_memory engine.

Three NPCs live through 120 frames of 10 s logical time each. Every frame the host:

1. ingests what each NPC saw this frame (``ingest_many``),
2. retrieves a dialog context for the NPCs that speak this frame (``retrieve``),
3. runs a bounded slice of maintenance (``tick(now, budget_ms=2.0)``): decay, TTL expiry,
   summarization scheduling, compaction,
4. phase 2 of summarization: sends last frame's summary prompts to its "LLM" and hands the
   text back (``summarization.complete``),
5. phase 1 of summarization: takes this frame's new tasks (``summarization.poll``).

A ``ScriptedPressure`` rate governor, polled by ``tick``, goes normal -> throttle ->
exhausted -> normal, and a ``ScriptedLLM`` stands in for the host's real model. Everything
is deterministic: logical time only, one seeded ``random.Random``; two runs print the same
lines, state hash included.

Run it with ``python examples/host_loop.py``.
"""

from __future__ import annotations

import random
from collections import Counter
from typing import Any

from f09_memory import (
    MemoryConfig,
    MemoryEngine,
    MemoryLayer,
    RetrievalRequest,
    SummarizationTask,
)
from f09_memory.testing import ScriptedLLM, ScriptedPressure

SEED = 7
FRAMES = 120
FRAME_MS = 10_000  # logical milliseconds per frame (the host's clock, never the wall clock)
NPCS = ("npc-smith", "npc-guard", "npc-baker")

# Small windows and caps so a 20-minute run summarizes and compacts (the values of
# f09_memory.determinism.scenario.LIFECYCLE_CONFIG); the defaults suit hours of play.
CONFIG = MemoryConfig(
    episodic_window=60_000,  # episodic records older than 1 min may be summarized
    summarization_min_interval_ms=30_000,  # at most one task per NPC every 30 s
    summarization_batch_size=10,  # up to 10 sources per summary
    summarization_keep_recent=10,  # the 10 newest episodic records are never summarized
    summarization_max_importance=0.9,  # only records at most this important are summarized
    retention_policy={"semantic_max": 8, "social_max": 5, "procedural_max": 4,
                      "protected_min": 3},  # per-layer caps enforced by compaction
)

# The rate governor: normal, then throttle from 400 s, exhausted from 600 s, normal from
# 800 s. The engine polls it at the start of every tick.
PRESSURE = ScriptedPressure([
    (0, "normal"),
    (400_000, "throttle"),
    (600_000, "exhausted"),
    (800_000, "normal"),
])

_PLACES = ("well", "market", "smithy", "tavern", "gate")
_ITEMS = ("bread", "iron nails", "a sword", "ale", "gold coins")
_EPISODIC = (
    "Saw {other} at the {place}.",
    "Traded {item} with {other} at the {place}.",
    "Heard a rumour at the {place} that {other} owes money.",
    "{other} argued with a stranger near the {place}!",
    "It rained, so I stayed near the {place}.",
)


def make_llm() -> ScriptedLLM:
    """The stand-in for the host's model: scripted replies, the last one repeating.

    The second reply is garbage on purpose: the engine rejects it and stores its local
    heuristic summary instead, so no record is lost to a bad model answer.
    """
    return ScriptedLLM([
        "The smith, the guard and the baker met at the well, the market, the smithy, the "
        "tavern and the gate, traded bread, iron nails, a sword, ale and gold coins, and "
        "heard rumours about money owed.",
        "As an AI language model I cannot summarize this.",
        "The smith, the guard and the baker met at the well, the market, the smithy, the "
        "tavern and the gate, traded bread, iron nails, a sword, ale and gold coins, and "
        "heard rumours about money owed.",
    ])


def frame_events(rng: random.Random, me: str) -> list[dict[str, object]]:
    """What ``me`` perceived this frame: 1-3 items, mostly episodic, some facts and ties."""
    items: list[dict[str, object]] = []
    for _ in range(rng.randint(1, 3)):
        other = rng.choice([n for n in NPCS if n != me]).removeprefix("npc-")
        place = rng.choice(_PLACES)
        roll = rng.random()
        if roll < 0.10:  # a fact: the semantic layer (capped at 8 by compaction)
            items.append({"content": f"The {place} opens at dawn.", "layer": "semantic",
                          "tags": ["fact", place]})
        elif roll < 0.18:  # a relationship: the social layer (capped at 5)
            sentiment = round(rng.uniform(-1.0, 1.0), 3)
            items.append({"content": f"Spoke with the {other}; it went "
                                     f"{'well' if sentiment > 0 else 'badly'}.",
                          "layer": "social",
                          "metadata": {"social": {"otherAgentId": f"npc-{other}",
                                                  "sentiment": sentiment}}})
        else:  # an observation: the episodic ring
            text = rng.choice(_EPISODIC).format(other=f"the {other}", place=place,
                                                item=rng.choice(_ITEMS))
            items.append({"content": text[0].upper() + text[1:], "tags": [place],
                          "importance": round(rng.uniform(0.1, 0.6), 3)})
    return items


def main() -> int:
    rng = random.Random(SEED)  # the only source of variety, seeded
    engine = MemoryEngine(CONFIG, seed=SEED, pressure_source=PRESSURE)
    llm = make_llm()

    # Count a few events. Handlers run synchronously after each state change.
    events: Counter[str] = Counter()
    expired_by: Counter[str] = Counter()
    pressure_log: list[str] = []

    def count(event: Any) -> None:
        events[event.name] += 1

    def on_expired(event: Any) -> None:  # reason: ttl, overflow, summarized or retention
        expired_by[event.reason] += 1

    def on_pressure(event: Any) -> None:
        pressure_log.append(f"{event.previous}->{event.current}")

    unsubscribe = [
        engine.bus.subscribe("memory:summarization:*", count),
        engine.bus.subscribe("memory:compaction", count),
        engine.bus.subscribe("memory:record:expired", on_expired),
        engine.bus.subscribe("memory:pressure:changed", on_pressure),
    ]

    in_flight: list[SummarizationTask] = []  # polled last frame, "awaiting" the model
    paths: Counter[str] = Counter()
    pruned = queued = spoken = compressed = 0
    now = 0

    def finish(tasks: list[SummarizationTask]) -> None:
        # Phase 2: the model's answers come back; the engine validates each one, stores the
        # summary record and retires its sources (or falls back to its heuristic summary).
        for task in tasks:
            assert task.prompt is not None  # poll() always attaches the redacted prompt
            text = llm.complete(task.prompt, system=engine.summarization.system_prompt)
            outcome = engine.summarization.complete(task.id, text)
            paths[outcome.path] += 1

    for frame in range(FRAMES):
        now = (frame + 1) * FRAME_MS

        # 1. Perception: what each NPC saw this frame.
        for npc in NPCS:
            engine.ingest_many(npc, frame_events(rng, npc), now=now)

        # 2. Dialog: one NPC speaks every frame, in turn; its prompt context comes from here.
        speaker = NPCS[frame % len(NPCS)]
        bundle = engine.retrieve(RetrievalRequest(agent_id=speaker, purpose="dialog",
                                                  max_tokens=200), now=now)
        spoken += 1
        compressed += bundle.diagnostics.compression_applied  # throttle/exhausted frames

        # 3. Maintenance within the frame budget. The budget is counted in work units, so
        #    the same calls do the same work on any machine; leftovers resume next tick.
        #    tick polls PRESSURE first. Under normal/soft pressure due summaries are queued
        #    for the host's LLM; under throttle tick completes them at once with the local
        #    heuristic summary; under exhausted it skips them (sources kept).
        report = engine.tick(now, budget_ms=2.0)
        pruned += report.pruned
        queued += report.summaries_queued

        # 4. Phase 2 for the tasks polled last frame (a real host would await its model).
        finish(in_flight)

        # 5. Phase 1: take this frame's new tasks; their prompts are already redacted.
        in_flight = engine.summarization.poll(now)

    finish(in_flight)  # drain the last frame's tasks before reporting
    for off in unsubscribe:
        off()

    print(f"frames: {FRAMES} x {FRAME_MS // 1000} s, npcs: {len(NPCS)}, "
          f"dialog retrievals: {spoken} ({compressed} compressed)")
    print("pressure changes: " + ", ".join(pressure_log))
    for layer in MemoryLayer:
        print(f"records {layer.value:<10} {engine.count(layer=layer):>4}")
    print(f"summaries queued: {queued}")
    completed = events["memory:summarization:completed"]
    print(f"summaries completed: {completed}")
    print(f"  two-phase: llm {paths['llm']}, heuristic fallback {paths['heuristic']} "
          f"({len(llm.calls)} llm calls); heuristic under throttle: "
          f"{completed - paths.total()}")
    print(f"summaries failed or skipped: {events['memory:summarization:failed']}")
    print(f"pruned by compaction: {pruned} ({events['memory:compaction']} compaction events)")
    print("records expired: " + ", ".join(f"{reason} {n}"
                                          for reason, n in sorted(expired_by.items())))
    print(f"final state hash: {engine.state_hash()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
