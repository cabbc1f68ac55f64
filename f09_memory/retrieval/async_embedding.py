"""Asynchronous embedding at ingest, applied at a logical point (``embedding_mode="async"``).

With a real model, embedding at ingest costs milliseconds per text, more than a frame can
give. In async mode ``ingest`` stores the records un-embedded and hands their texts to a
worker (a one-thread pool, or an executor the host passes with
``engine.set_embed_executor``); it never waits for the model. The vectors are attached by
the first ``tick`` at or after ``ingest time + embedding_latency_ms`` (logical time), which
waits there for the worker if it is not done yet. So when a record gains its semantic term
depends only on logical time, never on thread timing: until then it scores 0 on that term,
in every run. Pending jobs (their texts and due times) are saved with the engine and
submitted again on load.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Mapping, MutableSet, Sequence
from concurrent.futures import Executor, Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from f09_memory.store.agent import AgentMemory
from f09_memory.store.store import MemoryStore

__all__ = ["AsyncEmbedding", "EmbedJob", "attach_job"]

Embed = Callable[[Sequence[str]], NDArray[np.float32]]


@dataclass(slots=True)
class EmbedJob:
    """Texts of one ingest call on their way through the worker.

    Attributes:
        due: The logical time at which a tick attaches the vectors.
        keys: ``(agent_id, key)`` of each text's record (none for a query job).
        texts: The (redacted) contents, as stored, or redacted query texts.
        future: The worker's result.
    """

    due: int
    keys: list[tuple[str, int]]
    texts: list[str]
    future: Future[NDArray[np.float32]] | None = None
    queries: bool = False
    """A job of query texts (``keys`` empty): its vectors enter the query table."""


class AsyncEmbedding:
    """The queue of embedding jobs of one engine, oldest first.

    Args:
        embed: Turns texts into unit float32 rows (runs on the worker).
        latency_ms: Logical delay between an ingest and the tick that applies its vectors.
    """

    def __init__(self, embed: Embed, latency_ms: int) -> None:
        self._embed = embed
        self.latency_ms = latency_ms
        self.jobs: deque[EmbedJob] = deque()
        self._keys: tuple[int, dict[str, set[int]]] = (-1, {})
        """:meth:`keys_by_agent` and the :attr:`revision` it was gathered at."""
        self.queued_queries: set[str] = set()
        """Query texts of pending query jobs (not submitted twice)."""
        self._executor: Executor | None = None
        self._own: ThreadPoolExecutor | None = None
        self.revision = 0
        """Bumped whenever the queue changes (a cheap change check)."""

    def set_executor(self, executor: Executor | None) -> None:
        """Run jobs on ``executor`` from now on (``None``: a private one-thread pool)."""
        self._executor = executor

    def _pool(self) -> Executor:
        if self._executor is not None:
            return self._executor
        if self._own is None:
            self._own = ThreadPoolExecutor(max_workers=1, thread_name_prefix="f09-embed")
        return self._own

    def submit(self, keys: list[tuple[str, int]], texts: list[str], now: int) -> None:
        """Queue the texts of records stored at ``now``."""
        job = EmbedJob(now + self.latency_ms, keys, texts)
        job.future = self._pool().submit(self._embed, texts)
        self._queue(job)

    def submit_queries(self, texts: list[str], now: int) -> None:
        """Queue query texts asked at ``now`` (their vectors enter the query table)."""
        job = EmbedJob(now + self.latency_ms, [], texts, queries=True)
        job.future = self._pool().submit(self._embed, texts)
        self._queue(job)

    def _queue(self, job: EmbedJob) -> None:
        self.revision += 1
        self.jobs.append(job)
        if job.queries:
            self.queued_queries.update(job.texts)

    def keys_by_agent(self) -> dict[str, set[int]]:
        """Per agent, the keys of pending jobs (``tick``'s retries leave them alone).

        Gathered from the jobs when asked (only ticks that retry do) and kept until the
        queue changes: submitting and attaching keep no per-record bookkeeping. The mapping
        is shared with later calls: read it, do not change it.
        Runtime complexity: O(pending records) after a change, O(1) otherwise.
        """
        revision, keys = self._keys
        if revision != self.revision:
            keys = {}
            for job in self.jobs:
                for agent_id, key in job.keys:
                    keys.setdefault(agent_id, set()).add(key)
            self._keys = (self.revision, keys)
        return keys

    def take_due(self, now: int) -> list[EmbedJob]:
        """Remove and return the jobs due at or before ``now``, oldest first."""
        jobs = self.jobs
        if not jobs or jobs[0].due > now:
            return []
        self.revision += 1
        out = []
        while jobs and jobs[0].due <= now:
            job = jobs.popleft()
            if job.queries:
                self.queued_queries.difference_update(job.texts)
            out.append(job)
        return out

    @property
    def waiting(self) -> int:
        """Record texts submitted and not applied yet (query texts are not counted)."""
        return sum(len(job.texts) for job in self.jobs if not job.queries)

    def drop(self) -> None:
        """Forget every pending job (a new provider: the records are re-embedded anyway)."""
        self.revision += 1
        for job in self.jobs:
            if job.future is not None:
                job.future.cancel()
        self.jobs.clear()
        self.queued_queries.clear()

    def get_state(self) -> list[dict[str, Any]]:
        """The pending jobs, JSON-safe (due time, keys, texts)."""
        return [{"due": j.due, "keys": [[a, k] for a, k in j.keys], "texts": list(j.texts),
                 **({"queries": True} if j.queries else {})} for j in self.jobs]

    def set_state(self, jobs: Sequence[Mapping[str, Any]]) -> None:
        """Replace the queue with saved jobs and submit them again.

        Raises:
            ValueError: A job is malformed.
        """
        restored = []
        for j in jobs:
            keys = [(str(a), int(k)) for a, k in j["keys"]]
            texts = [str(t) for t in j["texts"]]
            queries = j.get("queries", False) is True
            if (queries and keys) or (not queries and len(keys) != len(texts)):
                raise ValueError("an embedding job's keys and texts disagree")
            restored.append(EmbedJob(int(j["due"]), keys, texts, queries=queries))
        self.drop()
        for job in restored:
            job.future = self._pool().submit(self._embed, job.texts)
            self._queue(job)


def attach_job(store: MemoryStore, keys: Sequence[tuple[str, int]], texts: Sequence[str],
               vectors: NDArray[np.float32], retry: MutableSet[str]) -> tuple[int, int]:
    """Attach a due job's vectors agent by agent, each agent's in the job's order.

    Only to records still stored as sent and not embedded meanwhile; an agent whose record
    changed its text is added to ``retry`` (a later tick re-embeds it). One store per run
    of an agent's rows (``AgentMemory.attach_rows``): a job lists each agent's records
    together, so the rows are walked once, without grouping them first.

    Returns:
        How many vectors were attached, and how many stored agents the job named (what a
        tick is charged: ``tick_costs.embed_apply`` and ``embed_apply_agent``).
    """
    done = 0
    named: set[str] = set()
    get = store.get
    am: AgentMemory | None = None
    current: str | None = None
    slots: list[int] = []
    rows: list[int] = []
    seen: set[tuple[str, int]] = set()  # a repeated key keeps its first row
    for i, pair in enumerate(keys):
        agent_id = pair[0]
        if agent_id != current:
            if slots:
                assert am is not None
                am.attach_rows(slots, vectors, rows)
                done += len(slots)
                slots, rows = [], []
            current, am = agent_id, get(agent_id)
            if am is not None:
                named.add(agent_id)
        if am is None:
            continue
        slot = am.slot_of.get(pair[1])
        if slot is None or am.embedded.item(slot) or pair in seen:
            continue
        seen.add(pair)
        if am.content[slot] != texts[i]:
            retry.add(agent_id)
            continue
        slots.append(slot)
        rows.append(i)
    if slots:
        assert am is not None
        am.attach_rows(slots, vectors, rows)
        done += len(slots)
    return done, len(named)
