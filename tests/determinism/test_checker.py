"""The determinism checker on user scenarios: passes, and names where a run diverges."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from f09_memory.cli import main
from f09_memory.determinism import checker
from f09_memory.errors import InputInvalidError

SCENARIOS = '''
from f09_memory import MemoryEngine, RetrievalRequest


def _base(engine, tick, names=("ann", "bob", "cid")):
    now = (tick + 1) * 1000
    for i, name in enumerate(names):
        engine.ingest(name, f"tick {tick}: {name} saw the well and the mill {i}",
                      importance=0.2 + 0.1 * i, now=now)
    engine.tick(now, budget_ms=1.0)
    return [engine.retrieve(RetrievalRequest(agent_id=n, purpose="dialog", max_tokens=200),
                            now=now) for n in names]


def steady(seed):
    return _base


def hash_dependent(seed):
    def step(engine, tick):
        if tick == 4:  # importance from hash(): differs with PYTHONHASHSEED
            engine.ingest("bob", "a rumour", importance=(hash("rumour") % 97) / 100,
                          now=(tick + 1) * 1000)
        return _base(engine, tick)
    return step


def budget_dependent(seed):
    def step(engine, tick):
        bundles = _base(engine, tick)
        if tick >= 3:  # a budget from hash(): other bundles, the same state
            budget = 20 + hash("budget") % 200
            bundles.append(engine.retrieve(RetrievalRequest(
                agent_id="cid", purpose="dialog", max_tokens=budget), now=(tick + 1) * 1000))
        return bundles
    return step


def reload_sensitive(seed):
    def step(engine, tick):
        # a host bug: state kept on the engine object is lost by save/load
        seen = getattr(engine, "host_counter", 0)
        engine.host_counter = seen + 1
        engine.ingest("ann", f"count {engine.host_counter}", now=(tick + 1) * 1000)
        return _base(engine, tick)
    return step
'''


@pytest.fixture(scope="module")
def scenario_env(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    folder = tmp_path_factory.mktemp("user_scenarios")
    (folder / "user_scenarios.py").write_text(textwrap.dedent(SCENARIOS), encoding="utf-8")
    path = os.pathsep.join(p for p in (str(folder), os.environ.get("PYTHONPATH", "")) if p)
    return {"PYTHONPATH": path}


def test_a_deterministic_scenario_passes_across_processes_and_a_save_load(scenario_env):
    report = checker.assert_deterministic("user_scenarios:steady", ticks=8, seeds=(1, 2),
                                          processes=2, env=scenario_env)
    assert report.ok
    assert {1, 2} == set(report.save_load_ticks)
    assert all(t is not None and 0 <= t < 7 for t in report.save_load_ticks.values())
    assert "deterministic" in report.describe()


def test_a_hash_dependent_write_is_reported_with_tick_agent_record_and_field(scenario_env):
    with pytest.raises(checker.DeterminismError, match="diverged at tick 4") as info:
        checker.assert_deterministic("user_scenarios:hash_dependent", ticks=6, processes=2,
                                     save_load=False, env=scenario_env)
    (div,) = info.value.report.divergences
    assert (4, "state", "bob", 1) == (div.tick, div.kind, div.agent, div.hash_seed)
    assert div.record is not None and div.record.startswith("bob:")
    assert "importance" in (div.field or "")
    assert div.expected != div.actual
    assert isinstance(info.value, AssertionError)  # a plain pytest failure in user tests


def test_a_retrieval_only_divergence_names_the_bundle(scenario_env):
    report = checker.check_determinism("user_scenarios:budget_dependent", ticks=5,
                                       processes=2, save_load=False, env=scenario_env)
    (div,) = report.divergences
    assert (3, "retrieval") == (div.tick, div.kind)
    assert div.field is not None


def test_state_lost_by_save_load_is_caught_in_the_reloaded_process(scenario_env):
    report = checker.check_determinism("user_scenarios:reload_sensitive", ticks=10,
                                       seeds=(3,), processes=2, env=scenario_env)
    (div,) = report.divergences
    reload_at = report.save_load_ticks[3]
    assert reload_at is not None
    assert (reload_at + 1, 1, reload_at) == (div.tick, div.hash_seed, div.save_load_tick)
    assert "ann" == div.agent
    assert "saved and loaded after tick" in div.describe()


def test_bad_arguments_raise_input_invalid() -> None:
    for kwargs in ({"processes": 1}, {"ticks": 0}, {"seeds": ()}, {"seeds": (-1,)}):
        with pytest.raises(InputInvalidError):
            checker.check_determinism("user_scenarios:steady", **kwargs)
    with pytest.raises(InputInvalidError, match="module:attribute"):
        checker.check_determinism("no_colon_here")
    with pytest.raises(InputInvalidError, match="importable"):
        checker.check_determinism(lambda seed: None)  # type: ignore[arg-type, return-value]


def test_a_failing_child_reports_its_error(scenario_env):
    with pytest.raises(RuntimeError, match="scenario run failed"):
        checker.check_determinism("user_scenarios:missing", ticks=2, processes=2,
                                  env=scenario_env)


def test_cli_determinism_prints_the_report(scenario_env, monkeypatch, capsys):
    for key, value in scenario_env.items():
        monkeypatch.setenv(key, value)
    assert 0 == main(["determinism", "--scenario", "user_scenarios:steady", "--ticks", "4",
                      "--processes", "2", "--seeds", "5"])
    assert ": deterministic" in capsys.readouterr().out
    assert 2 == main(["determinism", "--seeds", "a,b"])
    assert "--seeds" in capsys.readouterr().err


def test_the_plugin_fixtures_work_in_a_user_test_run(scenario_env, tmp_path: Path) -> None:
    user_test = tmp_path / "test_user_game.py"
    user_test.write_text(textwrap.dedent('''
        def test_engine_fixture(memory_engine):
            assert 11 == memory_engine.seed
            memory_engine.ingest("npc", "hello", now=1)
            assert 1 == memory_engine.count()

        def test_scenario_is_deterministic(assert_deterministic):
            report = assert_deterministic("user_scenarios:steady", ticks=4)
            assert report.hash_seeds == (0, 1)
    '''), encoding="utf-8")
    env = dict(os.environ, **scenario_env)
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "f09_memory.determinism.plugin",
         "-p", "no:cacheprovider", "--f09-seed", "11", "--f09-processes", "2", str(user_test)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert 0 == proc.returncode, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert "2 passed" in proc.stdout
