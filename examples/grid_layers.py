"""A small grid world with food, danger and gossip, remembered through the game layers.

Twelve villagers live on a 32 x 32 map cut into four regions. Each step (one logical
second) they get hungrier, walk, look around and meet each other; the world reports what
happened as engine events, one ``ingest_events`` call per frame:

- every step is a ``movement`` (physics adapter: only crossing into another region is
  remembered, and it keeps the villager's last known position for perception);
- a berry bush seen within 3 cells is a ``sighting`` (spatial layer, tagged ``food``);
- a wolf den within 2 cells is an ``attack`` (witnesses within 6 cells remember it too);
- eating, foraging and fleeing are ``action`` events (action, outcome, context), which the
  procedural miner turns into "what usually works when hungry";
- two villagers within 2 cells talk: an ``interaction`` (the social ledger keeps count,
  sentiment and trust) and sometimes ``gossip`` about a third one (hearsay, discounted).

A hungry villager walks to the nearest food it remembers (``engine.nearby`` on its spatial
memories), else wanders. At the end the example prints, for three villagers, what they
remember and why: where food is, whom they trust, what works when hungry, and the
navigation bundle at their position with each record's score. Run it twice: the output
and the state hash are identical (also across processes and ``PYTHONHASHSEED`` values).

    python examples/grid_layers.py [--steps N] [--seed S]
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from f09_memory import MemoryConfig, MemoryEngine, RetrievalRequest

SIZE = 32
FOOD = [(4.0, 5.0), (27.0, 6.0), (15.0, 16.0), (6.0, 26.0), (25.0, 25.0)]
DENS = [(20.0, 10.0), (9.0, 18.0)]
NAMES = [f"villager-{i:02d}" for i in range(12)]


def region(x: float, y: float) -> str:
    """The region of a cell: the map's four quarters."""
    return ("north" if y < SIZE / 2 else "south") + ("-west" if x < SIZE / 2 else "-east")


@dataclass
class Villager:
    """One villager's body (its memory is the engine's)."""

    name: str
    x: float
    y: float
    hunger: float = 0.3
    traits: dict[str, float] = field(default_factory=dict)


def config() -> MemoryConfig:
    """The engine settings of the world: routing rules for its own event kinds."""
    return MemoryConfig(
        episodic_max=200,
        dedup_window_ms=600_000,  # a bush seen again reinforces its memory, not a copy
        perception={"rules": {
            "sighting": {"layer": "spatial", "perceivers": ["actor"], "tags": ["food"],
                         "places_actor": False, "importance": 0.6},
            "attack": {"perceivers": ["actor", "nearby"], "radius": 6.0, "importance": 0.9,
                       "tags": ["danger"], "places_actor": False},
        }},
    )


def nearest(points: list[tuple[float, float]], x: float, y: float) -> tuple[float, float, float]:
    """The nearest of ``points`` to ``(x, y)`` and its distance (ties: list order)."""
    d = [((px - x) ** 2 + (py - y) ** 2) ** 0.5 for px, py in points]
    i = int(np.argmin(d))
    return points[i][0], points[i][1], d[i]


def step_world(engine: MemoryEngine, villagers: list[Villager], rng: np.random.Generator,
               now: int) -> list[dict[str, Any]]:
    """Move everyone one step; return the frame's engine events."""
    events: list[dict[str, Any]] = []
    for v in villagers:
        v.hunger = min(1.0, v.hunger + 0.04)
        hungry = v.hunger > 0.6
        before = region(v.x, v.y)
        goal = None
        if hungry:
            found = engine.nearby(v.name, (v.x, v.y), radius=SIZE * 2.0, k=4, layer="spatial",
                                  now=now)
            food = [hit.record.metadata.spatial for hit in found
                    if "food" in hit.record.metadata.tags]
            if food and food[0] is not None:
                goal = (food[0].x, food[0].y)
        if goal is not None:
            dx, dy = np.sign(goal[0] - v.x), np.sign(goal[1] - v.y)
            events.append(_action(v, "seek", "success", "hungry", now))
        else:
            dx, dy = (int(d) for d in rng.integers(-1, 2, size=2))
        v.x = float(np.clip(v.x + dx, 0, SIZE - 1))
        v.y = float(np.clip(v.y + dy, 0, SIZE - 1))
        events.append({"kind": "movement", "actor": v.name, "position": (v.x, v.y),
                       "payload": {"fromRegion": before, "toRegion": region(v.x, v.y)}})
        fx, fy, fd = nearest(FOOD, v.x, v.y)
        if fd <= 3.0:
            events.append({"kind": "sighting", "actor": v.name, "position": (fx, fy),
                           "text": f"Berry bushes at ({fx:.0f}, {fy:.0f}) in the "
                                   f"{region(fx, fy)}.", "payload": {"what": "berries"}})
        if fd <= 1.5 and hungry:
            v.hunger = 0.0
            events.append(_action(v, "eat", "success", "hungry", now))
        elif hungry and rng.random() < 0.3:
            events.append(_action(v, "forage", "success" if rng.random() < 0.2 else "failure",
                                  "hungry", now))
        wx, wy, wd = nearest(DENS, v.x, v.y)
        if wd <= 2.0:
            events.append({"kind": "attack", "actor": v.name, "position": (wx, wy),
                           "text": f"A wolf attacked {v.name} near the den at "
                                   f"({wx:.0f}, {wy:.0f})!"})
            events.append(_action(v, "flee", "success", "danger", now))
            v.x, v.y = float(np.clip(v.x + 3 * np.sign(v.x - wx), 0, SIZE - 1)), float(
                np.clip(v.y + 3 * np.sign(v.y - wy), 0, SIZE - 1))
    return events


def _action(v: Villager, action: str, outcome: str, context: str, now: int
            ) -> dict[str, Any]:
    # the time in the text keeps each attempt its own record (dedup would merge repeats)
    return {"kind": "action", "actor": v.name, "position": (v.x, v.y),
            "text": f"At {now // 1_000}s {v.name} tried to {action} ({outcome}).",
            "payload": {"action": action, "outcome": outcome, "context": context}}


def meetings(villagers: list[Villager], rng: np.random.Generator
             ) -> list[tuple[Villager, Villager]]:
    """Pairs within 2 cells of each other (in name order) who stop to talk."""
    pairs = []
    for i, a in enumerate(villagers):
        for b in villagers[i + 1:]:
            if abs(a.x - b.x) + abs(a.y - b.y) <= 2.0 and rng.random() < 0.7:
                pairs.append((a, b))
    return pairs


def talk(engine: MemoryEngine, a: Villager, b: Villager, rng: np.random.Generator
         ) -> list[dict[str, Any]]:
    """The events of a meeting: how it went, and maybe gossip about someone a knows."""
    mood = float(np.clip((a.traits["kindness"] + b.traits["kindness"]) / 2
                         + rng.normal(0, 0.3), -1, 1))
    events: list[dict[str, Any]] = [{
        "kind": "interaction", "actor": a.name, "target": b.name, "position": (a.x, a.y),
        "text": f"{a.name} and {b.name} talked; it went {'well' if mood > 0 else 'badly'}.",
        "payload": {"sentiment": round(mood, 3)}}]
    known = [o for o in engine.acquaintances(a.name, 3, by="count")
             if o.other_agent_id != b.name]
    if known and rng.random() < 0.5:
        about = known[0]
        events.append({
            "kind": "gossip", "actor": a.name, "target": b.name, "position": (a.x, a.y),
            "text": f"{a.name} told {b.name} that {about.other_agent_id} is "
                    f"{'kind' if about.sentiment > 0 else 'rude'}.",
            "payload": {"about": about.other_agent_id,
                        "sentiment": round(about.sentiment, 3)}})
    return events


def explain(engine: MemoryEngine, v: Villager, now: int) -> list[str]:
    """What ``v`` remembers and why, as printable lines."""
    out = [f"== {v.name} at ({v.x:.0f}, {v.y:.0f}), hunger {v.hunger:.2f}"]
    food = [hit for hit in engine.nearby(v.name, (v.x, v.y), radius=SIZE * 2.0, k=8,
                                         layer="spatial", now=now)
            if "food" in hit.record.metadata.tags][:2]
    out += [f"  food it remembers: {hit.record.content} ({hit.distance:.1f} cells away)"
            for hit in food] or ["  food it remembers: none yet"]
    for o in engine.acquaintances(v.name, 2, by="trust", include_hearsay=True):
        out.append(f"  trusts {o.other_agent_id}: trust {o.trust:+.2f} from {o.count} "
                   f"talks and {o.hearsay_count} rumours")
    for p in engine.procedures(v.name, context="hungry", k=2):
        out.append(f"  when hungry: {' -> '.join(p.actions)} worked "
                   f"{p.success_rate:.0%} of {p.support} times")
    bundle = engine.retrieve(RetrievalRequest(agent_id=v.name, purpose="navigation",
                                              max_tokens=90, position=(v.x, v.y)), now=now)
    for r in bundle.records[:3]:
        why = [r.layer.value, *r.metadata.tags]
        if r.metadata.spatial is not None:
            dist = ((r.metadata.spatial.x - v.x) ** 2 + (r.metadata.spatial.y - v.y) ** 2) ** .5
            why.append(f"{dist:.0f} cells away")
        out.append(f"  navigating, it recalls: {r.content} [{', '.join(why)}]")
    return out


def main(argv: list[str] | None = None) -> int:
    """Run the world and print what three villagers remember."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(args.seed)
    engine = MemoryEngine(config(), seed=args.seed)
    villagers = [Villager(n, float(rng.integers(0, SIZE)), float(rng.integers(0, SIZE)),
                          traits={"kindness": float(rng.uniform(-0.5, 1.0))})
                 for n in NAMES]
    engine.place({v.name: (v.x, v.y) for v in villagers}, now=0)
    created = 0
    now = 0
    for step in range(1, args.steps + 1):
        now = step * 1_000
        events = step_world(engine, villagers, rng, now)
        for a, b in meetings(villagers, rng):
            events += talk(engine, a, b, rng)
        created += len(engine.ingest_events(events, now=now))
        engine.tick(now, budget_ms=1.0)
    for v in villagers[:3]:
        print("\n".join(explain(engine, v, now)))
    counts = {layer: engine.count(layer=layer) for layer in
              ("episodic", "social", "spatial", "procedural")}
    print(f"records created: {created}; live by layer: {counts}")
    print(f"final state hash: {engine.state_hash()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
