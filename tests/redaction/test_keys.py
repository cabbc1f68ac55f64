"""The redaction key: keyed placeholders, a key that never shows, snapshots that need it."""

from __future__ import annotations

import logging
import pickle
from pathlib import Path

import pytest
from pydantic import SecretStr

from f09_memory import MemoryConfig, MemoryEngine
from f09_memory.core.digest import config_fingerprint
from f09_memory.errors import ErrorCode, MemoryEngineError
from f09_memory.redaction import REDACTION_KEY_ENV, Redactor, key_id
from f09_memory.redaction.keys import warn_unkeyed

KEY = "village-key-Zq8vN3xL0pW7"
OTHER = "another-key-4kR9sT2uV6yB"
EMAIL = "mara.smith@forge.example.com"


def keyed(key: str = KEY, **kw: object) -> MemoryConfig:
    return MemoryConfig(redaction_key=key, **kw)


def test_the_key_never_shows_in_repr_str_dumps_or_json() -> None:
    config = keyed()
    assert config.redaction_key is not None and KEY == config.redaction_key.get_secret_value()
    for text in (repr(config), str(config), str(config.model_dump()),
                 str(config.model_dump(by_alias=True)), str(config.to_json_dict()),
                 str(config.model_dump_json())):
        assert KEY not in text
    assert key_id(KEY.encode()) == config.redaction_key_id == config.to_json_dict()[
        "redactionKeyId"]
    assert "redactionKey" not in config.to_json_dict()
    assert KEY.encode() not in pickle.dumps(config.to_json_dict())


def test_the_key_id_names_the_key_without_revealing_it() -> None:
    assert key_id(KEY.encode()) == key_id(KEY.encode()) != key_id(OTHER.encode())
    assert 16 == len(key_id(KEY.encode())) and KEY not in key_id(KEY.encode())


def test_the_fingerprint_holds_the_key_id_not_the_key() -> None:
    plain, a, b = MemoryConfig(), keyed(), keyed(OTHER)
    assert len({config_fingerprint(plain), config_fingerprint(a), config_fingerprint(b)}) == 3
    assert config_fingerprint(a) == config_fingerprint(keyed())
    assert plain.to_json_dict()["redactionKeyId"] is None
    assert all("redactionKey" not in c.to_json_dict() for c in (plain, a, b))


@pytest.mark.parametrize("bad", ["tiny-k3y", "q" * 15])
def test_a_short_key_is_refused_without_echoing_it(bad: str) -> None:
    with pytest.raises(MemoryEngineError) as info:
        keyed(bad)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert "redaction_key" == info.value.details["field"]
    for text in (str(info.value), str(info.value.details), str(info.value.__cause__)):
        assert bad not in text


def test_replace_keeps_the_key_and_a_new_key_gets_its_own_id() -> None:
    config = keyed()
    same = config.replace(episodic_max=7)
    assert same.redaction_key == config.redaction_key and 7 == same.episodic_max
    assert same.redaction_key_id == config.redaction_key_id
    other = config.replace(redaction_key=OTHER)
    assert key_id(OTHER.encode()) == other.redaction_key_id
    cleared = config.replace(redaction_key=None)
    assert cleared.redaction_key is None and cleared.redaction_key_id is None


def test_the_env_variable_sets_the_key() -> None:
    config = MemoryConfig.from_env({REDACTION_KEY_ENV: f"  {KEY}\n"})
    assert keyed().redaction_key_id == config.redaction_key_id
    assert MemoryConfig.from_env({REDACTION_KEY_ENV: "  "}).redaction_key is None


def test_engines_with_the_same_key_store_the_same_placeholders() -> None:
    a = MemoryEngine(keyed(), embedder=None).ingest("npc", f"mail {EMAIL}", now=0)
    b = MemoryEngine(keyed(), embedder=None).ingest("npc", f"mail {EMAIL}", now=0)
    c = MemoryEngine(keyed(OTHER), embedder=None).ingest("npc", f"mail {EMAIL}", now=0)
    d = MemoryEngine(embedder=None).ingest("npc", f"mail {EMAIL}", now=0)
    assert a.content == b.content == f"mail {Redactor(['EMAIL'], key=KEY).placeholder(EMAIL)}"
    assert len({a.content, c.content, d.content}) == 3


def test_no_key_warns_once_per_process(caplog: pytest.LogCaptureFixture) -> None:
    warn_unkeyed.cache_clear()
    with caplog.at_level(logging.WARNING, logger="f09_memory"):
        MemoryEngine(embedder=None)
        MemoryEngine(embedder=None)
        MemoryEngine(keyed(), embedder=None)
    warnings = [r for r in caplog.records if "no redaction key" in r.getMessage()]
    assert 1 == len(warnings) and logging.WARNING == warnings[0].levelno
    assert REDACTION_KEY_ENV in warnings[0].getMessage()
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="f09_memory"):
        MemoryEngine(embedder=None)
    assert "no redaction key" not in caplog.text


def test_a_keyed_snapshot_holds_no_key_and_loads_only_with_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REDACTION_KEY_ENV, raising=False)
    engine = MemoryEngine(keyed(), embedder=None)
    engine.ingest("npc", f"mail {EMAIL}", now=0)
    path = engine.save(tmp_path / "snap.f09")
    assert KEY.encode() not in path.read_bytes()
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.load(path, embedder=None)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert REDACTION_KEY_ENV in info.value.message
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.load(path, embedder=None, redaction_key=OTHER)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    assert OTHER not in str(info.value) and KEY not in str(info.value)
    loaded = MemoryEngine.load(path, embedder=None, redaction_key=KEY)
    assert engine.state_hash() == loaded.state_hash()
    again = loaded.ingest("npc", f"mail {EMAIL}", now=1)  # same key: the same placeholder
    assert engine.records("npc")[0].content == again.content
    monkeypatch.setenv(REDACTION_KEY_ENV, KEY)
    assert engine.state_hash() == MemoryEngine.load(path, embedder=None).state_hash()


def test_an_unkeyed_snapshot_refuses_a_key_but_ignores_the_env_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    engine = MemoryEngine(embedder=None)
    engine.ingest("npc", f"mail {EMAIL}", now=0)
    path = engine.save(tmp_path / "snap.f09")
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.load(path, embedder=None, redaction_key=KEY)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    monkeypatch.setenv(REDACTION_KEY_ENV, KEY)
    loaded = MemoryEngine.load(path, embedder=None)
    assert engine.state_hash() == loaded.state_hash()
    assert loaded.config.redaction_key is None


def test_a_config_naming_a_key_it_does_not_hold_cannot_build_an_engine() -> None:
    restored = MemoryConfig.parse(keyed().to_json_dict())
    assert restored.redaction_key is None and restored.redaction_key_id is not None
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine(restored, embedder=None)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    config = restored.with_redaction_key(SecretStr(KEY))
    assert config == keyed() and config.with_redaction_key(KEY) is config
    assert config == restored.with_redaction_key(environ={REDACTION_KEY_ENV: KEY})
    with pytest.raises(MemoryEngineError):
        restored.with_redaction_key(environ={})


def test_a_durable_database_needs_its_key(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(REDACTION_KEY_ENV, raising=False)
    db = tmp_path / "mem.db"
    engine = MemoryEngine.open(db, keyed(), embedder=None)
    engine.ingest("npc", "hello", now=0)
    expected = engine.state_hash()
    engine.close()
    with pytest.raises(MemoryEngineError) as info:
        MemoryEngine.open(db, embedder=None)
    assert ErrorCode.MEMORY_CONFIG_INVALID == info.value.code
    reopened = MemoryEngine.open(db, keyed(), embedder=None)
    assert expected == reopened.state_hash()
    reopened.close()
    monkeypatch.setenv(REDACTION_KEY_ENV, KEY)
    reopened = MemoryEngine.open(db, embedder=None)
    assert expected == reopened.state_hash()
    reopened.close()
