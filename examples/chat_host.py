"""A chat-agent host loop around the f09_memory engine, over two sessions.

The "LLM" is a :class:`~f09_memory.testing.ScriptedLLM`. A reply is either plain text (said
to the user) or one JSON object asking for memory tools::

    {"tool_calls": [{"name": "memory_write", "arguments": {"content": "...", "keywords": [...]}}]}

The host parses that format, runs each call with ``execute_tool_json`` (``execute_tool``'s
payload as JSON text; a bad call gives ``ok: false``) and feeds the result back as a ``tool``
turn, then asks the model again (at most :data:`MAX_STEPS` times per user message).

Session 1 makes decisions and hits a blocker; every :data:`HEARTBEAT_EVERY` user messages
the host calls ``heartbeat_store`` (idle capture of key moments), and at the end it calls
``pre_compaction_dump`` and saves the engine with ``engine.save``.

Session 2 loads the snapshot with ``MemoryEngine.load``, builds the system messages with
``bootstrap_messages`` (the memory SOP plus the newest ``memory_write`` entries) and a
blended startup context with ``contextual_recall`` for the opening user message, and shows
that the session-1 decision is recalled.

Everything is deterministic: logical time only, no wall clock, no randomness; the snapshot
lives in a temporary directory whose path is never printed. Two runs print the same lines.

Run it with ``python examples/chat_host.py``.
"""

from __future__ import annotations

import json
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from f09_memory import MemoryEngine
from f09_memory.runtime import (
    MomentCategory,
    contextual_recall,
    heartbeat_store,
    pre_compaction_dump,
)
from f09_memory.testing import ScriptedLLM
from f09_memory.tools import (
    ToolContext,
    bootstrap_messages,
    execute_tool_json,
    tool_definitions,
)

AGENT = "billing-assistant"
TOPIC = "billing"
SYNONYMS = {"billing": ["invoice", "invoices", "payments"]}
HEARTBEAT_EVERY = 2  # user messages between two heartbeats
MAX_STEPS = 4  # model calls per user message (tool round trips included)
STEP_MS = 1_000  # logical milliseconds per model step
SESSION_2_START = 10_000_000  # logical time of the second session (the next day, say)
RECALL_TOKENS = 80  # token budget of the startup context of session 2
# The MEMORY_* settings the host passes explicitly, so the output does not depend on the
# caller's environment (a real host would leave environ=None and read os.environ).
ENVIRON = {"MEMORY_BOOTSTRAP_MAX_ENTRIES": "5", "MEMORY_BOOTSTRAP_MAX_CHARS": "600"}

TOOL_FORMAT_HELP = (
    'To use a memory tool, reply with one JSON object: {"tool_calls": [{"name": ..., '
    '"arguments": {...}}]}. Tools: '
)


def call(name: str, **arguments: Any) -> str:
    """A scripted model reply that asks for one tool call."""
    return json.dumps({"tool_calls": [{"name": name, "arguments": arguments}]})


SESSION_1_USER = (
    "Hi! We are building the billing service. I prefer Python for backend work.",
    "Which database should the billing service use?",
    "And how do we ship it?",
    "Can you run the billing schema migration now?",
    "OK, I will ask ops for the staging credentials tomorrow.",
    "Remind me: which backend language did I pick?",
)
SESSION_1_REPLIES = (
    # 1: store the preference, then answer
    call("memory_write", content="User prefers Python for backend work.",
         keywords=["python", "backend", "preference"]),
    "Noted: Python for the backend.",
    # 2: a decision, written down as a durable entry too
    call("memory_write", content="Billing database: Postgres 16.",
         keywords=["billing", "database", "postgres"]),
    "Decision: use Postgres for the billing database. It fits the ledger model.",
    # 3: another decision
    "Going with blue-green deploys on Kubernetes for billing.",
    # 4: a blocker
    "Blocked by the missing staging credentials. I can't run the migration yet.",
    # 5: plain acknowledgement
    "Thanks. The migration waits for those credentials.",
    # 6: a bad call (limit out of range) gets ok:false, the model retries, then answers
    call("memory_search", query="language preference", limit=50),
    call("memory_search", query="language preference python", limit=3),
    "You prefer Python for backend work.",
)

SESSION_2_USER = (
    "Morning! Let's continue with billing: where did we land on the database for invoices?",
)
SESSION_2_REPLIES = (
    call("memory_search", query="billing database"),
    "We decided on Postgres 16 for billing. The schema migration is still blocked by the "
    "staging credentials.",
)


@dataclass
class Session:
    """One chat session: its id, clock, conversation and the host's heartbeat cursor."""

    engine: MemoryEngine
    session_id: str
    now: int
    system: str
    llm: ScriptedLLM
    turns: list[dict[str, str]] = field(default_factory=list)
    last_stored_index: int = -1
    step: int = 0

    def context(self, call_id: str) -> ToolContext:
        return ToolContext(AGENT, session_id=self.session_id, step_index=self.step,
                           now=self.now, call_id=call_id)


def parse_reply(text: str) -> list[dict[str, Any]] | None:
    """Return the tool calls of a reply in the JSON format, or ``None`` for plain text."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return None
    try:
        payload = json.loads(stripped)
    except ValueError:
        return None
    calls = payload.get("tool_calls") if isinstance(payload, dict) else None
    if not isinstance(calls, list):
        return None
    return [c for c in calls if isinstance(c, dict)]


def render_prompt(turns: list[dict[str, str]]) -> str:
    return "\n".join(f"{t['role']}: {t['content']}" for t in turns)


def user_message(session: Session, text: str) -> None:
    """One user message: model steps until a plain-text reply (or MAX_STEPS)."""
    print(f"user: {text}")
    session.turns.append({"role": "user", "content": text})
    for _ in range(MAX_STEPS):
        session.now += STEP_MS
        session.step += 1
        reply = session.llm.complete(render_prompt(session.turns), system=session.system)
        calls = parse_reply(reply)
        if calls is None:
            print(f"assistant: {reply}")
            session.turns.append({"role": "assistant", "content": reply})
            return
        for i, tool_call in enumerate(calls):
            name = str(tool_call.get("name"))
            arguments = tool_call.get("arguments")
            ctx = session.context(f"call-{session.step}-{i}")
            print(f"assistant -> {name} {json.dumps(arguments)}")
            result = execute_tool_json(session.engine, name, arguments, ctx)
            print(f"tool: {result}")
            session.turns.append({"role": "tool", "content": result})
    print("assistant: (step limit reached)")


def heartbeat(session: Session) -> None:
    result = heartbeat_store(session.engine, AGENT, session.turns, session_id=session.session_id,
                             topic_slug=TOPIC, last_stored_index=session.last_stored_index,
                             now=session.now)
    session.last_stored_index = result.last_index
    kinds = ", ".join(m.category.value for m in result.moments) or "snapshot"
    print(f"  [heartbeat] stored {result.stored} ({kinds}); "
          f"skipped={result.skipped}; last_index={result.last_index}")


def run_session_1(snapshot: Path) -> tuple[list[str], str]:
    engine = MemoryEngine(seed=0)
    tools = json.dumps(tool_definitions("anthropic"))
    system = "\n\n".join(m["content"] for m in bootstrap_messages(engine, AGENT, environ=ENVIRON))
    session = Session(engine, "s1", 1_000, f"{system}\n\n{TOOL_FORMAT_HELP}{tools}",
                      ScriptedLLM(SESSION_1_REPLIES))
    print("== session 1 ==")
    for n, text in enumerate(SESSION_1_USER, start=1):
        user_message(session, text)
        if n % HEARTBEAT_EVERY == 0:
            heartbeat(session)

    dump = pre_compaction_dump(engine, AGENT, session.turns, session_id=session.session_id,
                               topic_slug=TOPIC, now=session.now + STEP_MS)
    print(f"  [dump] {dump.takeaways} takeaways, {dump.stored} new records "
          f"(snapshot {dump.snapshot_id})")
    decisions = [m.text for m in dump.moments if m.category is MomentCategory.DECISION]
    engine.save(snapshot)
    state = engine.state_hash()
    print(f"  [save] {engine.count(AGENT)} records, state hash {state[:16]}, "
          f"model calls {len(session.llm.calls)}")
    return decisions, state


def run_session_2(snapshot: Path, saved_state: str) -> list[str]:
    engine = MemoryEngine.load(snapshot)
    print("== session 2 ==")
    print(f"  [load] state hash matches: {engine.state_hash() == saved_state}")
    now = SESSION_2_START
    opening = SESSION_2_USER[0]
    messages = bootstrap_messages(engine, AGENT, environ=ENVIRON, now=now)
    entries = messages[-1]["content"].splitlines()[1:] if len(messages) > 1 else []
    print(f"  [bootstrap] {len(messages)} system messages: SOP "
          f"({len(messages[0]['content'])} chars) + {len(entries)} memory entries")
    for line in entries:
        print(f"    {line}")
    recall = contextual_recall(engine, AGENT, opening, max_tokens=RECALL_TOKENS,
                               synonyms=SYNONYMS, now=now)
    print(f"  [recall] topic={recall.topic_slug}, {len(recall.memories)} memories, "
          f"{recall.total_tokens} tokens, {recall.excluded} left out")
    for record in recall.memories:
        print(f"    - {record.content}")
    recalled = [record.content for record in recall.memories]
    context = "\n".join(f"- {text}" for text in recalled)
    system = "\n\n".join([*(m["content"] for m in messages),
                          f"Recalled context:\n{context}", TOOL_FORMAT_HELP])
    session = Session(engine, "s2", now, system, ScriptedLLM(SESSION_2_REPLIES))
    user_message(session, opening)
    return recalled


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="f09-chat-") as tmp:
        snapshot = Path(tmp) / "chat-memory.f09"
        decisions, state = run_session_1(snapshot)
        recalled = run_session_2(snapshot, state)

    found = [d for d in decisions if d in recalled]
    print("== summary ==")
    print(f"session-1 decisions: {len(decisions)}")
    for decision in decisions:
        mark = "recalled" if decision in recalled else "not recalled"
        print(f"  {mark}: {decision}")
    print(f"session-1 decision recalled in session 2: {'yes' if found else 'no'}")
    return 0 if found else 1


if __name__ == "__main__":
    raise SystemExit(main())
