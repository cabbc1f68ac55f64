from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from f09_memory import MemoryConfig
from f09_memory.importance import ImportanceModel, Vocabulary, boosted_importance


def model() -> ImportanceModel:
    return ImportanceModel(MemoryConfig().importance)


def test_emotional_text_scores_higher_than_neutral() -> None:
    m = model()
    calm = m.score("walked along the quiet road today", Vocabulary(64))
    intense = m.score("bandits attacked and killed the guard! blood everywhere",
                      Vocabulary(64))
    assert intense > calm


def test_repeated_text_loses_novelty() -> None:
    m = model()
    v = Vocabulary(64)
    first = m.score("the blacksmith repaired my shovel", v)
    again = m.score("the blacksmith repaired my shovel", v)
    assert first > again


def test_flag_adds_its_weight_and_scores_stay_in_unit_range() -> None:
    m = model()
    s = MemoryConfig().importance
    plain = m.score("walked home", Vocabulary(64))
    flagged = m.score("walked home", Vocabulary(64), flagged=True)
    assert round(plain + s.flag_weight, 6) == flagged
    loud = m.score("attack! kill! fire! blood! death! " * 5, Vocabulary(64), flagged=True)
    assert 0.0 <= plain and loud <= 1.0


def test_scores_are_deterministic() -> None:
    m = model()
    texts = ["Saw the smith.", "Fire at the mill!", "Saw the smith."]
    v1, v2 = Vocabulary(64), Vocabulary(64)
    assert [m.score(t, v1) for t in texts] == [m.score(t, v2) for t in texts]


def test_vocabulary_is_bounded_and_round_trips() -> None:
    v = Vocabulary(16)
    for i in range(100):
        v.observe({f"word{i}"})
    assert len(v) <= 16
    clone = Vocabulary(16)
    clone.set_state(v.get_state())
    assert v.get_state() == clone.get_state()
    assert 0.0 == v.observe(set())


def test_boost_applies_only_to_flagged() -> None:
    assert 0.5 == boosted_importance(0.5, False, 2.5)
    assert 1.25 == boosted_importance(0.5, True, 2.5)


def test_observe_many_ends_as_observing_each_text_in_order() -> None:
    m = model()
    texts = ["The smith's forge roared", "RAIN over the mill, rain again", "İstanbul naïve café",
             "ÉCOLE d'été 2024 rocks", "", "smith forge smith"]
    for size in (16, 24, 64, 4096):  # small vocabularies roll over mid-batch
        one, many = Vocabulary(size), Vocabulary(size)
        for text in texts:
            m.observe(text, one)
        m.observe_many(texts, many)
        assert one.get_state() == many.get_state()
        assert one.digest() == many.digest()


def test_observe_union_leaves_out_short_words_and_journals_the_kept_ones() -> None:
    raw = {"an", "ox", "forge", "smith's", "mill"}
    kept = {w for w in raw if len(w) >= 4}
    filtered, unfiltered = Vocabulary(64), Vocabulary(64)
    effects: list[tuple[object, ...]] = []
    filtered.journal = (effects, "npc")
    assert filtered.observe_union(raw, 4)
    assert unfiltered.observe_union(kept)
    assert unfiltered.get_state() == filtered.get_state()
    assert unfiltered.digest() == filtered.digest()
    assert [("vocab.union", "npc", sorted(kept))] == effects
    assert filtered.observe_union({"an", "ox"}, 4)  # nothing new: nothing journaled
    assert 1 == len(effects)
    small = Vocabulary(8)  # a generation of 4: the union would fill it
    assert not small.observe_union(raw | {"anvil"}, 4)
    assert [[], []] == small.get_state()


def test_words_of_all_is_the_union_of_each_text_words() -> None:
    m = model()
    texts = ["Alpha beta's gamma-delta", "ÉCOLE naïve Σίσυφος", "x\ny zz www 1234"]
    assert set().union(*(m.words(t) for t in texts)) == m.words_of_all(texts)
    assert set().union(*(m.words(t) for t in texts[:1])) == m.words_of_all(texts[:1])


ALPHABET = "aZ9' \n\t-.!,_\u0130\u212a\u03a3\u03c3\u00e90\x85\u2003"


@given(st.text(alphabet=st.sampled_from(ALPHABET), max_size=60), st.integers(1, 6))
def test_words_are_the_regex_runs_of_the_lowered_text(text: str, min_len: int) -> None:
    settings = MemoryConfig().importance.model_copy(update={"novelty_min_word_len": min_len})
    m = ImportanceModel(settings)
    assert set(re.findall(rf"[a-z0-9']{{{min_len},}}", text.lower())) == m.words(text)


@given(st.lists(st.text(alphabet=st.sampled_from(ALPHABET), max_size=30), max_size=8),
       st.integers(1, 5), st.sampled_from([8, 16, 4096]))
def test_observe_ends_as_observing_the_words_of_the_text(texts: list[str], min_len: int,
                                                         size: int) -> None:
    settings = MemoryConfig().importance.model_copy(update={"novelty_min_word_len": min_len})
    m = ImportanceModel(settings)
    fast, plain = Vocabulary(size), Vocabulary(size)
    fast_effects: list[tuple[object, ...]] = []
    plain_effects: list[tuple[object, ...]] = []
    fast.journal, plain.journal = (fast_effects, "npc"), (plain_effects, "npc")
    for text in texts:
        m.observe(text, fast)
        plain.observe(m.words(text))
    assert plain.get_state() == fast.get_state()
    assert plain.digest() == fast.digest()
    assert plain_effects == fast_effects


TEXTS = st.lists(st.text(alphabet="aB c'd\n\0.é", max_size=20), max_size=8)


@given(TEXTS, st.lists(st.integers(0, 4), max_size=6), st.sampled_from([6, 16, 4096]),
       st.sampled_from([1, 3]))
def test_observe_runs_ends_as_observe_many_of_each_run(texts: list[str], sizes: list[int],
                                                       size: int, min_len: int) -> None:
    """Runs of ASCII texts, with NUL or other text, rolling small vocabularies over."""
    m = ImportanceModel(MemoryConfig().importance.model_copy(
        update={"novelty_min_word_len": min_len}))
    runs, row = [], 0
    for k in sizes:
        k = min(k, len(texts) - row)
        runs.append(k)
        row += k
    texts = texts[:row]
    one = [Vocabulary(size) for _ in runs]
    many = [Vocabulary(size) for _ in runs]
    effects_one: list[tuple[object, ...]] = []
    effects_many: list[tuple[object, ...]] = []
    for i, (a, b) in enumerate(zip(one, many, strict=True)):
        a.journal, b.journal = (effects_one, i), (effects_many, i)
    row = 0
    for k, vocabulary in zip(runs, one, strict=True):
        m.observe_many(texts[row:row + k], vocabulary)
        row += k
    m.observe_runs(texts, list(zip(runs, many, strict=True)))
    assert [v.get_state() for v in one] == [v.get_state() for v in many]
    assert [v.digest() for v in one] == [v.digest() for v in many]
    assert effects_one == effects_many


def _regex_score(m: ImportanceModel, text: str, vocabulary: Vocabulary, flagged: bool) -> float:
    """The heuristic as written from its definition (regex words of the lowered text)."""
    s = m.settings
    hits = sum(1 for w in re.findall(r"[a-z0-9']+", text.lower()) if w in m._lexicon)
    emotion = min(1.0, (hits + 0.5 * text.count("!")) / s.emotion_saturation)
    novelty = vocabulary.observe(m.words(text))
    value = (s.base + s.emotion_weight * emotion + s.novelty_weight * novelty
             + (s.flag_weight if flagged else 0.0))
    return round(min(1.0, max(0.0, value)), 6)


@given(st.lists(st.text(alphabet=st.sampled_from(ALPHABET + "ANGRYjoyfear"), max_size=40),
                max_size=8),
       st.integers(1, 5), st.booleans())
def test_score_equals_its_definition_on_any_text(texts: list[str], min_len: int,
                                                 flagged: bool) -> None:
    settings = MemoryConfig().importance.model_copy(update={
        "novelty_min_word_len": min_len, "emotion_lexicon": ("angry", "joy", "fear", "a")})
    m = ImportanceModel(settings)
    fast, plain = Vocabulary(16), Vocabulary(16)
    for text in texts:
        assert m.score(text, fast, flagged=flagged) == _regex_score(m, text, plain, flagged)
    assert fast.get_state() == plain.get_state() and fast.digest() == plain.digest()
