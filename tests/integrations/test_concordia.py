"""The Concordia bank against the real gdm-concordia: an entity with the mock model, the same
top-k as Concordia's own bank, dedup, kept adds and raw text, state, threads, bad input."""

from __future__ import annotations

import json
import zlib
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np
import pytest

pytest.importorskip("concordia")

from concordia.associative_memory import basic_associative_memory as concordia_bank
from concordia.prefabs.entity import basic
from concordia.testing import mock_model
from concordia.typing import entity as entity_lib

from f09_memory import MemoryConfig
from f09_memory.config import ScoreWeights
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.integrations import concordia as ours
from f09_memory.schema import Purpose, Strategy

# Concordia's own bank (the reference) sorts with pandas' deprecated ``inplace=True``.
pytestmark = pytest.mark.filterwarnings("ignore:The inplace keyword in Series.sort_values")


class Projection:
    """A deterministic embedder: the unit sum of per-word Gaussian vectors (seeded by crc32).

    Distinct texts get distinct cosines (ties have probability zero); ``calls`` counts texts.
    """

    def __init__(self, dim: int = 48) -> None:
        self.dim = dim
        self.calls = 0
        self._words: dict[str, np.ndarray] = {}

    def __call__(self, text: str) -> np.ndarray:
        self.calls += 1
        v = np.zeros(self.dim)
        for word in text.lower().split():
            w = self._words.get(word)
            if w is None:
                w = self._words[word] = np.random.default_rng(
                    zlib.crc32(word.encode())).standard_normal(self.dim)
            v += w
        n = np.linalg.norm(v)
        return v / n if n else v


def bag_of_words(text: str) -> np.ndarray:
    """A tie-heavy embedder: word counts hashed into 8 buckets, unit length."""
    v = np.zeros(8)
    for word in text.lower().split():
        v[zlib.crc32(word.encode()) % 8] += 1.0
    n = np.linalg.norm(v)
    return v / n if n else v


WORDS = [f"w{i}" for i in range(60)]


def texts(n: int, seed: int, words: int = 6) -> list[str]:
    rng = np.random.default_rng(seed)
    return [" ".join(rng.choice(WORDS, words)) + f" #{i}" for i in range(n)]


def both(embedder: Callable[[str], np.ndarray], memories: list[str]) -> tuple[Any, Any]:
    theirs = concordia_bank.AssociativeMemoryBank(embedder)
    mine = ours.AssociativeMemoryBank(embedder)
    for text in memories:
        theirs.add(text)
        mine.add(text)
    return theirs, mine


def assert_same_top_k(embedder: Callable[[str], np.ndarray], theirs: Any, mine: Any,
                      memories: list[str], query: str, k: int) -> None:
    """Same positive cosines rank by rank, the same text wherever that cosine is unique in
    the bank; past them, memories of cosine <= 0 (which the engine's ``max(0, cos)`` ties)."""
    q = embedder(query)
    cosine = {m: round(float(np.dot(q, embedder(m))), 6) for m in memories}
    a, b = theirs.retrieve_associative(query, k), mine.retrieve_associative(query, k)
    assert len(a) == len(b)
    positive = [cosine[t] for t in a if cosine[t] > 0]
    assert positive == [cosine[t] for t in b][: len(positive)]
    assert all(cosine[t] <= 0 for t in b[len(positive):])
    counts: dict[float, int] = {}
    for c in cosine.values():
        counts[c] = counts.get(c, 0) + 1
    for ta, tb in zip(a[: len(positive)], b, strict=False):
        if counts[cosine[ta]] == 1:
            assert ta == tb


# ------------------------------------------------------------------ a Concordia entity
def scene(bank: Any) -> tuple[Any, str]:
    agent = basic.Entity(params={"name": "Alice", "goal": "buy bread",
                                 "randomize_choices": False}).build(mock_model.MockModel(), bank)
    for text in ["Alice saw Bob at the market.", "Bob sold bread to Carol.",
                 "Bob sold bread to Carol.", "It rained over the market.",
                 "Carol thanked\nBob."]:
        agent.observe(text)
    action = agent.act(entity_lib.free_action_spec(call_to_action="What does Alice do?"))
    agent.observe("Alice bought bread.")
    return agent, action


def test_an_entity_with_the_mock_model_behaves_as_with_concordias_own_bank() -> None:
    embedder = Projection()
    theirs, mine = concordia_bank.AssociativeMemoryBank(embedder), ours.AssociativeMemoryBank(
        embedder)
    agent_a, action_a = scene(theirs)
    agent_b, action_b = scene(mine)
    assert action_a == action_b
    log = json.dumps(agent_a.get_last_log(), sort_keys=True, default=str)
    assert log == json.dumps(agent_b.get_last_log(), sort_keys=True, default=str)
    assert list(theirs.get_all_memories_as_text()) == mine.get_all_memories_as_text()
    assert 5 == len(mine)  # the repeated observation was stored once
    assert "[observation] Carol thanked Bob." in mine.get_all_memories_as_text()
    assert list(theirs.retrieve_recent(3)) == mine.retrieve_recent(3)
    memories = mine.get_all_memories_as_text()
    for query in ("bread", "Bob sold bread", "market"):
        assert_same_top_k(embedder, theirs, mine, memories, query, 3)


def test_an_entity_checkpoint_is_json_and_restores_into_a_new_bank() -> None:
    embedder = Projection()
    agent, _ = scene(ours.AssociativeMemoryBank(embedder, seed=3))
    checkpoint = json.loads(json.dumps(agent.get_state()))
    bank = ours.AssociativeMemoryBank(embedder, seed=3)
    fresh = basic.Entity(params={"name": "Alice", "goal": "buy bread",
                                 "randomize_choices": False}).build(mock_model.MockModel(), bank)
    fresh.set_state(checkpoint)
    memory = agent.get_component("__memory__")
    assert memory.get_all_memories_as_text() == bank.get_all_memories_as_text()
    assert memory.retrieve_associative("market rain", 4) == bank.retrieve_associative(
        "market rain", 4)
    for a in (agent, fresh):
        a.observe("Dusk fell.")
        a.act(entity_lib.free_action_spec(call_to_action="What next?"))
    assert memory.get_all_memories_as_text() == bank.get_all_memories_as_text()
    bank.engine._check()


# ------------------------------------------------------------------ ranking
def test_top_10_equals_concordias_bank_under_cosine_only_weights() -> None:
    embedder = Projection()
    memories = texts(300, seed=1)
    theirs, mine = both(embedder, memories)
    for query in texts(25, seed=2, words=3):
        assert theirs.retrieve_associative(query, 10) == mine.retrieve_associative(query, 10)


def test_equal_cosines_are_the_only_difference_with_a_tie_heavy_embedder() -> None:
    memories = texts(120, seed=4, words=3)
    theirs, mine = both(bag_of_words, memories)
    for query in texts(20, seed=5, words=2):
        assert_same_top_k(bag_of_words, theirs, mine, memories, query, 10)
    first = mine.retrieve_associative("w1", 120)
    cos = [round(float(np.dot(bag_of_words("w1"), bag_of_words(t))), 6) for t in first]
    assert cos == sorted(cos, reverse=True)
    ties = [t for t, c in zip(first, cos, strict=True) if c == cos[0]]
    assert ties == [t for t in memories if t in ties]  # equal cosine: oldest first


def test_k_beyond_the_bank_returns_everything_and_an_empty_bank_nothing() -> None:
    bank = ours.AssociativeMemoryBank(Projection())
    assert [] == bank.retrieve_associative("anything", 5)
    assert [] == bank.retrieve_recent(5)
    assert [] == bank.scan(lambda _: True)
    bank.extend(["one", "two", "three"])
    assert 3 == len(bank.retrieve_associative("one", 50))
    assert ["one", "two", "three"] == bank.retrieve_recent(50)
    assert ["two", "three"] == bank.retrieve_recent(2)


def test_the_preset_is_cosine_only_for_associative_retrieval_and_nothing_else() -> None:
    config = ours.bank_config()
    weights = config.scoring.weights
    assert ours.COSINE_ONLY == weights[Purpose.REASONING][Strategy.SEMANTIC]
    assert MemoryConfig().scoring.weights[Purpose.DIALOG] == weights[Purpose.DIALOG]
    assert MemoryConfig().scoring.weights[Purpose.REASONING][Strategy.BALANCED] == weights[
        Purpose.REASONING][Strategy.BALANCED]
    assert ScoreWeights(importance=0, recency=0, semantic=1, structural=0) == ours.COSINE_ONLY


def test_a_throttled_engine_still_returns_the_stored_text() -> None:
    bank = ours.AssociativeMemoryBank(Projection())
    long_text = "First sentence about bread. " + "Second sentence. " * 30
    bank.add(long_text)
    bank.engine.set_pressure("exhausted")
    assert [long_text.replace("\n", " ")] == bank.retrieve_associative("bread", 1)


# ------------------------------------------------------------------ what is kept
def test_duplicates_are_ignored_without_calling_the_embedder() -> None:
    embedder = Projection()
    bank = ours.AssociativeMemoryBank(embedder, embedder_dim=48)
    bank.add("the well\nis dry")
    calls = embedder.calls
    bank.add("the well is dry")
    bank.extend(["the well\nis dry", "the well is deep"])
    assert ["the well is dry", "the well is deep"] == bank.get_all_memories_as_text()
    assert calls + 1 == embedder.calls
    assert 2 == len(bank)


def test_every_add_is_kept_by_default_and_the_ceiling_raises_instead_of_evicting() -> None:
    default_ring = MemoryConfig().episodic_max
    bank = ours.AssociativeMemoryBank(bag_of_words,
                                      config=MemoryConfig(max_records_per_agent=40))
    assert bank.capacity is None and 40 == bank.config.episodic_max < default_ring
    bank.extend(f"memory {i}" for i in range(40))
    before = bank.engine.state_hash()
    with pytest.raises(MemoryEngineError) as err:
        bank.add("one too many")
    assert ErrorCode.MEMORY_CAPACITY_EXCEEDED == err.value.code
    assert before == bank.engine.state_hash() and 40 == len(bank)
    assert "memory 0" == bank.get_all_memories_as_text()[0]


def test_an_explicit_capacity_keeps_the_newest_and_forgets_evicted_duplicates() -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words, capacity=3)
    bank.extend(["a", "b", "c", "d", "b"])
    assert ["b", "c", "d"] == bank.get_all_memories_as_text()
    bank.add("a")  # evicted before: stored again
    assert ["c", "d", "a"] == bank.get_all_memories_as_text()
    bank.extend(f"m{i}" for i in range(20))  # the dedup index stays bounded
    assert 3 == len(bank) and ["m17", "m18", "m19"] == bank.retrieve_recent(3)


def test_raw_text_by_default_so_scan_matches_and_redact_is_explicit() -> None:
    note = "Carol's address is carol@example.com"
    raw = ours.AssociativeMemoryBank(Projection())
    raw.add(note)
    assert [note] == raw.scan(lambda t: "carol@example.com" in t)
    assert raw.config.redaction_mode is False
    safe = ours.AssociativeMemoryBank(Projection(), redact=True)
    safe.add(note)
    safe.add(note)  # dedup sees the stored (redacted) text
    assert [] == safe.scan(lambda t: "carol@example.com" in t)
    assert 1 == len(safe.scan(lambda t: "<REDACT:" in t))
    assert "carol@example.com" not in json.dumps(safe.get_state())
    assert safe.retrieve_associative("carol@example.com", 1)[0].startswith("Carol's address")


def test_the_clock_counts_stored_adds() -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    bank.extend(["x", "y", "x", "z"])
    records = bank.engine.records(bank.agent_id)
    assert [0, 1, 2] == [r.created_at for r in records]


# ------------------------------------------------------------------ state and threads
def test_state_round_trip_keeps_memories_dedup_and_clock() -> None:
    embedder = Projection()
    bank = ours.AssociativeMemoryBank(embedder, seed=7)
    bank.extend(texts(30, seed=8))
    state = json.loads(json.dumps(bank.get_state()))
    other = ours.AssociativeMemoryBank(embedder, seed=7)
    other.set_state(state)
    assert bank.engine.state_hash() == other.engine.state_hash()
    assert bank.retrieve_associative("w3 w4", 5) == other.retrieve_associative("w3 w4", 5)
    for b in (bank, other):
        b.extend([texts(30, seed=8)[0], "a new memory"])
    assert bank.get_all_memories_as_text() == other.get_all_memories_as_text()
    assert 31 == len(other) and 30 == other.engine.records(other.agent_id)[-1].created_at


def test_set_state_takes_concordias_own_bank_state() -> None:
    embedder = Projection()
    theirs = concordia_bank.AssociativeMemoryBank(embedder)
    theirs.extend(texts(20, seed=9))
    bank = ours.AssociativeMemoryBank(embedder)
    bank.set_state(json.loads(json.dumps(theirs.get_state())))
    assert list(theirs.get_all_memories_as_text()) == bank.get_all_memories_as_text()
    assert list(theirs.retrieve_associative("w7", 5)) == bank.retrieve_associative("w7", 5)


@pytest.mark.parametrize("damage", [
    {"format": "other"}, {"version": 2}, {"clock": -1}, {"clock": 2}, {"snapshot": "%%%"},
    {"snapshot": "AAAA"}, {"agent_id": "someone"}, {"capacity": 5},
])
def test_a_damaged_state_is_refused_and_changes_nothing(damage: dict[str, object]) -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    bank.extend(["a", "b", "c"])
    state = {**bank.get_state(), **damage}
    before = bank.engine.state_hash()
    with pytest.raises(MemoryEngineError) as err:
        bank.set_state(state)
    assert ErrorCode.MEMORY_SNAPSHOT_INVALID == err.value.code
    assert before == bank.engine.state_hash() and ["a", "b", "c"] == bank.retrieve_recent(3)


def test_a_damaged_concordia_state_is_refused() -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    for memory_bank in ("not json", '{"text": [1, 2]}', '{"text": {"x": "a"}}', 5):
        with pytest.raises(MemoryEngineError) as err:
            bank.set_state({"memory_bank": memory_bank, "stored_hashes": []})
        assert ErrorCode.MEMORY_SNAPSHOT_INVALID == err.value.code


def test_calls_from_worker_threads_hand_the_engine_over() -> None:
    bank = ours.AssociativeMemoryBank(Projection())
    with ThreadPoolExecutor(max_workers=4) as pool:
        list(pool.map(bank.add, texts(40, seed=11)))
        found = list(pool.map(lambda q: bank.retrieve_associative(q, 3), ["w1", "w2", "w3"]))
    assert 40 == len(bank) and all(3 == len(f) for f in found)
    bank.add("back on the main thread")
    assert "back on the main thread" == bank.retrieve_recent(1)[0]


# ------------------------------------------------------------------ bad input
def test_without_an_embedder_add_and_associative_retrieval_raise_like_concordia() -> None:
    bank = ours.AssociativeMemoryBank()
    for call in (lambda: bank.add("x"), lambda: bank.retrieve_associative("x", 1)):
        with pytest.raises(ValueError, match="Embedder must be set"):
            call()
    bank.set_embedder(bag_of_words)
    bank.add("x")
    assert ["x"] == bank.retrieve_associative("x", 1)


@pytest.mark.parametrize("k", [0, -1, 1.5, True, "3"])
def test_k_must_be_a_positive_int(k: object) -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    bank.add("x")
    for call in (bank.retrieve_recent, lambda k: bank.retrieve_associative("x", k)):
        with pytest.raises(ValueError) as err:
            call(k)
        assert isinstance(err.value, MemoryEngineError)
        assert ErrorCode.MEMORY_INPUT_INVALID == err.value.code


def test_bad_text_and_a_failing_embedder_store_nothing() -> None:
    state = {"fail": False}

    def flaky(text: str) -> np.ndarray:
        if state["fail"]:
            raise RuntimeError("model down")
        return bag_of_words(text)

    bank = ours.AssociativeMemoryBank(flaky)
    bank.add("kept")
    before = bank.engine.state_hash()
    for bad in (None, 3, "   "):
        with pytest.raises(MemoryEngineError) as err:
            bank.add(bad)  # type: ignore[arg-type]
        assert ErrorCode.MEMORY_INPUT_INVALID == err.value.code
    state["fail"] = True
    with pytest.raises(MemoryEngineError) as err:
        bank.add("lost")
    assert ErrorCode.MEMORY_EMBEDDING_FAILED == err.value.code
    assert isinstance(err.value.__cause__, RuntimeError)
    with pytest.raises(MemoryEngineError):
        bank.retrieve_associative("kept", 1)
    assert before == bank.engine.state_hash() and ["kept"] == bank.get_all_memories_as_text()


@pytest.mark.parametrize("fn", [lambda _: np.zeros(0), lambda _: np.array([np.nan, 1.0]),
                                lambda _: "text"])
def test_an_embedder_without_usable_vectors_is_refused(fn: Callable[[str], Any]) -> None:
    with pytest.raises(MemoryEngineError) as err:
        ours.AssociativeMemoryBank(fn)
    assert ErrorCode.MEMORY_EMBEDDING_FAILED == err.value.code


def test_a_new_embedder_of_another_length_re_embeds_every_memory() -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    memories = texts(15, seed=12)
    bank.extend(memories)
    wide = Projection(dim=32)
    bank.set_embedder(wide)
    reference = concordia_bank.AssociativeMemoryBank(wide)
    reference.extend(memories)
    assert list(reference.retrieve_associative("w5 w9", 5)) == bank.retrieve_associative(
        "w5 w9", 5)
    bank.engine._check()


@pytest.mark.parametrize("capacity", [0, -3, 2.5, True, 2_000_000])
def test_a_bad_capacity_is_a_config_error(capacity: object) -> None:
    with pytest.raises(MemoryEngineError) as err:
        ours.AssociativeMemoryBank(bag_of_words, capacity=capacity)  # type: ignore[arg-type]
    assert ErrorCode.MEMORY_CONFIG_INVALID == err.value.code


def test_get_data_frame_has_the_text_column_in_add_order() -> None:
    bank = ours.AssociativeMemoryBank(bag_of_words)
    bank.extend(["a", "b"])
    assert ["a", "b"] == bank.get_data_frame()["text"].tolist()
