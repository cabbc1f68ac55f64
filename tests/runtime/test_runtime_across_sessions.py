"""PRD section 11: decisions made in one session are recalled in the next, in a new process
over the durable store."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from f09_memory import MemoryEngine
from f09_memory.runtime import contextual_recall

SESSION_ONE = textwrap.dedent("""
    import sys
    from f09_memory import MemoryEngine
    from f09_memory.runtime import heartbeat_store, pre_compaction_dump
    engine = MemoryEngine.open(sys.argv[1], seed=0)
    turns = [
        {"role": "user", "content": "How should we store the billing ledger?"},
        {"role": "assistant", "content": "Decision: the billing ledger moves to Postgres."},
        {"role": "user", "content": "I prefer weekly release notes."},
        {"role": "assistant", "content": "We are blocked by the missing database credentials."},
    ]
    result = heartbeat_store(engine, "assistant-1", turns, min_new_turns=2,
                             session_id="s-1", now=1_000)
    pre_compaction_dump(engine, "assistant-1", turns, session_id="s-1", now=2_000)
    print(len(result.ids))
    # no close(): the process just ends, like a crashed or killed session
""")


def test_a_decision_from_one_session_is_recalled_in_the_next_process(tmp_path: Path) -> None:
    db = tmp_path / "assistant.db"
    done = subprocess.run([sys.executable, "-c", SESSION_ONE, str(db)], capture_output=True,
                          text=True, check=True)
    assert int(done.stdout.strip()) >= 1
    engine = MemoryEngine.open(db)  # session two, a new process's view of the store
    recall = contextual_recall(engine, "assistant-1", "Where does the billing ledger live?",
                               max_tokens=300, now=100_000)
    contents = " ".join(m.content for m in recall.memories)
    assert "Postgres" in contents
    assert recall.total_tokens <= 300
    blocker = contextual_recall(engine, "assistant-1", "what is blocking us? credentials",
                                max_tokens=300, now=100_000)
    assert "credentials" in " ".join(m.content for m in blocker.memories)
