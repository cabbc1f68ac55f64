"""A Mesa grid world whose foragers remember neighbours and berry bushes, then recall them.

Sixteen foragers walk a 20 x 20 Mesa grid (``mesa.discrete_space``) with six berry bushes.
Each step (one unit of logical time: ``model.steps``) every forager looks around (radius 2):
each neighbour and each bush it sees becomes a memory (``self.memory.observe``, spatial
metadata for bushes). A hungry forager recalls where food is (``self.memory.recall`` with a
query, a tag filter and its position) and walks there; otherwise it wanders. The model owns
one engine for all foragers (``attach_memory``), seeded by the model's seed, and ticks it
once per step. At the end it prints, for three foragers, whom they met most recently, where
they remember food, and the state hash: identical in every run and process for one seed.

    python examples/mesa_foragers.py [--steps N] [--seed S]
"""

from __future__ import annotations

import argparse
from typing import Any

import mesa
from mesa.discrete_space import CellAgent, OrthogonalMooreGrid

from f09_memory.integrations.mesa import MemoryAgentMixin, attach_memory, step_config

SIZE = 20
BUSHES = 6
FORAGERS = 16


class Forager(MemoryAgentMixin, CellAgent):  # type: ignore[misc]
    """A forager: hunger, a cell, and a memory (``self.memory``) in the model's engine."""

    def __init__(self, model: Any, cell: Any) -> None:
        super().__init__(model)
        self.cell = cell
        self.hunger = 0.0
        self.meals = 0

    def look(self) -> None:
        x, y = self.cell.coordinate
        around = self.cell.get_neighborhood(radius=2, include_center=True)
        for other in sorted(around.agents, key=lambda a: a.unique_id):
            if other is not self:
                ox, oy = other.cell.coordinate
                self.memory.observe(f"Met forager {other.unique_id} near ({ox}, {oy}).",
                                    tags=["neighbour"], importance=0.3)
        for cell in sorted(around.cells, key=lambda c: c.coordinate):
            if cell.coordinate in self.model.bushes:
                bx, by = cell.coordinate
                self.memory.observe(f"Berries grow at ({bx}, {by}).", layer="spatial",
                                    tags=["food"], importance=0.7,
                                    metadata={"spatial": {"x": bx, "y": by}})
        if (x, y) in self.model.bushes and self.hunger > 0.5:
            self.hunger, self.meals = 0.0, self.meals + 1
            self.memory.observe(f"Ate berries at ({x}, {y}).", importance=0.8, tags=["meal"])

    def step(self) -> None:
        self.hunger += 0.1
        self.look()
        target = None
        if self.hunger > 0.5:
            x, y = self.cell.coordinate
            for record in self.memory.recall("where do berries grow", k=3, tags_any=["food"],
                                             purpose="navigation", position=(x, y)):
                spot = record.metadata.spatial
                if spot is not None:
                    target = (int(spot.x), int(spot.y))
                    break
        if target is None:
            self.cell = self.cell.neighborhood.select_random_cell()
        else:
            self.cell = min(self.cell.get_neighborhood(include_center=True).cells,
                            key=lambda c: (abs(c.coordinate[0] - target[0])
                                           + abs(c.coordinate[1] - target[1]), c.coordinate))


class Valley(mesa.Model):  # type: ignore[misc]
    """The world: a grid, bushes at seeded places, foragers, one shared memory engine."""

    def __init__(self, seed: int) -> None:
        super().__init__(seed=seed)
        self.grid = OrthogonalMooreGrid((SIZE, SIZE), torus=False, random=self.random)
        cells = sorted(self.grid.all_cells.cells, key=lambda c: c.coordinate)
        picks = self.random.sample(range(len(cells)), BUSHES + FORAGERS)
        self.bushes = {cells[i].coordinate for i in picks[:BUSHES]}
        attach_memory(self, step_config(episodic_max=300, dedup_window_ms=1_000))
        for i in picks[BUSHES:]:
            Forager(self, cells[i])

    def step(self) -> None:
        self.agents.shuffle_do("step")
        self.memory.tick(budget_ms=2.0)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--seed", type=int, default=42)
    args = parser.parse_args()
    model = Valley(seed=args.seed)
    for _ in range(args.steps):
        model.step()
    foragers = sorted(model.agents, key=lambda a: a.unique_id)
    print(f"{len(foragers)} foragers, {args.steps} steps, seed {args.seed}, "
          f"{model.memory.engine.count()} memories, "
          f"{sum(f.meals for f in foragers)} meals")
    for forager in foragers[:3]:
        memory = forager.memory
        x, y = forager.cell.coordinate
        print(f"\nforager {forager.unique_id} at ({x}, {y}), {memory.count()} memories, "
              f"{forager.meals} meals")
        met = [r.content for r in memory.recent(40) if "neighbour" in r.metadata.tags][:2]
        print("  last met:  " + (" | ".join(met) or "nobody"))
        food = memory.recall("where do berries grow", k=3, tags_any=["food"])
        print("  food:      " + (" | ".join(r.content for r in food) or "none known"))
    print(f"\nstate hash: {model.memory.engine.state_hash()}")


if __name__ == "__main__":
    main()
