"""The social ledger in snapshots, the durable journal and the state hash."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.errors import InputInvalidError, SnapshotInvalidError
from f09_memory.social import AcquaintanceOrder


def workload(mem: MemoryEngine) -> None:
    mem.interact_many([(f"npc-{i % 7}", f"npc-{(i * 3 + 1) % 11}", ((i % 9) - 4) / 4.0)
                       for i in range(200) if i % 7 != (i * 3 + 1) % 11], now=1)
    mem.interact("npc-1", "npc-2", -1.0, kind="betrayal", weight=2.0, now=2)
    mem.hear("npc-3", "npc-9", source="npc-1", chain=["npc-2"], sentiment=0.7, now=3)


def answers(mem: MemoryEngine) -> list[object]:
    out: list[object] = [mem.opinion("npc-1", "npc-2"), mem.opinion("npc-3", "npc-9"),
                         mem.opinion("npc-0", "zz")]
    orders: tuple[AcquaintanceOrder, ...] = ("trust", "count", "recent")
    for by in orders:
        out.append(mem.acquaintances("npc-1", 5, by=by, include_hearsay=True))
    return out


def test_the_hash_covers_the_ledger_only_once_it_is_used() -> None:
    mem, fresh = MemoryEngine(MemoryConfig()), MemoryEngine(MemoryConfig())
    mem.opinion("a", "b")
    mem.acquaintances("a", 3)
    assert mem.state_hash() == fresh.state_hash()  # reading keeps the old hashes
    mem.interact("a", "b", 0.5, now=0)
    h1 = mem.state_hash()
    assert h1 != fresh.state_hash()
    quiet = MemoryEngine(MemoryConfig(social={"records": False}))
    quiet.interact("a", "b", 0.5, now=0)
    h2 = quiet.state_hash()
    quiet.interact("a", "b", 0.4, now=0)  # a ledger-only change (no record)
    assert quiet.state_hash() != h2


def test_save_and_load_keep_the_hash_and_the_answers(tmp_path: Path) -> None:
    mem = MemoryEngine(MemoryConfig(), seed=3)
    workload(mem)
    path = mem.save(tmp_path / "snap.f09")
    loaded = MemoryEngine.load(path)
    assert loaded.state_hash() == mem.state_hash()
    assert answers(loaded) == answers(mem)
    loaded._check()
    # the same calls after the load go the same way
    more = [("npc-1", "npc-2", 0.9, 4), ("npc-5", "npc-6", -0.3, 4)]
    assert mem.interact_many(more) == loaded.interact_many(more)
    assert loaded.state_hash() == mem.state_hash()


def test_a_durable_engine_reopens_with_the_same_ledger(tmp_path: Path) -> None:
    db = tmp_path / "mem.db"
    live = MemoryEngine.open(db, MemoryConfig(), seed=2)
    workload(live)
    with pytest.raises(InputInvalidError):  # a failed call leaves nothing in the journal
        live.interact_many([("npc-1", "npc-4", 0.5), ("npc-1", "npc-1", 0.5)])
    h, ans = live.state_hash(), answers(live)
    durable: Any = live._durable
    durable.log.close()  # as a killed process: no checkpoint
    reopened = MemoryEngine.open(db)
    assert reopened.state_hash() == h and answers(reopened) == ans
    reopened._check()
    count = reopened.opinion("npc-1", "npc-4").count
    reopened.interact("npc-1", "npc-4", 0.5, now=9)
    h2 = reopened.state_hash()
    reopened.close()
    again = MemoryEngine.open(db)
    assert again.state_hash() == h2 and again.opinion("npc-1", "npc-4").count == count + 1
    again.close()


def test_a_snapshot_with_an_out_of_range_ledger_is_refused(tmp_path: Path) -> None:
    mem = MemoryEngine(MemoryConfig())
    workload(mem)
    table = mem._social.ledger
    slot = table.slot(("npc-1", "npc-2"))
    assert slot is not None
    table.column("trust")[slot] = 3.0  # corrupt the state behind the engine's back
    table.touch(np.array([slot]))
    path = mem.save(tmp_path / "bad.f09")
    with pytest.raises(SnapshotInvalidError):
        MemoryEngine.load(path)
