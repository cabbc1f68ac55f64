"""MemoryConfig: every tunable of the engine, validated on construction (spec sections 6, 21)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Annotated, ClassVar, Literal

from pydantic import Field, SecretStr, StrictInt, model_validator

from f09_memory._validate import MAX_LOGICAL_TIME
from f09_memory.config.perception import DEFAULT_EVENT_RULES, PerceptionSettings
from f09_memory.config.procedural import ProceduralSettings
from f09_memory.config.social import SocialSettings
from f09_memory.config.spatial import SpatialSettings
from f09_memory.config.tables import ScoringTables
from f09_memory.errors import ConfigInvalidError, ErrorCode, RetentionViolationError
from f09_memory.json_types import JsonValue
from f09_memory.redaction.keys import MIN_KEY_CHARS, REDACTION_KEY_ENV, key_bytes, key_id
from f09_memory.redaction.patterns import DEFAULT_PATTERNS, compile_patterns
from f09_memory.schema.base import BoundaryModel
from f09_memory.schema.enums import MemoryLayer

__all__ = ["DEFAULT_EMBED_UNITS", "ImportanceSettings", "MemoryConfig", "RetentionPolicy",
           "TickCosts"]

PosInt = Annotated[StrictInt, Field(ge=1, lt=MAX_LOGICAL_TIME)]
Duration = Annotated[StrictInt, Field(ge=0, lt=MAX_LOGICAL_TIME)]
"""A logical duration (ms or ticks): below 2**62, so a time plus it fits int64."""


class _ConfigModel(BoundaryModel):
    _default_code: ClassVar[ErrorCode] = ErrorCode.MEMORY_CONFIG_INVALID

    def to_json_dict(self) -> dict[str, JsonValue]:
        """Return the JSON form with every field, ``None`` ones included.

        A ``None`` setting is a setting (``summarization_timeout_ms=None``: wait forever;
        ``semantic_max=None``: uncapped), so it must survive a snapshot and count in the
        config fingerprint instead of coming back as the default.
        """
        return self.model_dump(mode="json", by_alias=True)


class RetentionPolicy(_ConfigModel):
    """Per-layer live-record caps (spec ``retentionPolicy``); ``None`` means uncapped.

    Compaction (``f09_memory.retention``) prunes a capped layer down to its cap, never
    below ``protected_min`` records: the ``protected_min`` records of highest decayed score
    (most important / most recent) are never pruned. A cap below ``protected_min`` is a
    contradiction and raises MEMORY_RETENTION_VIOLATION naming the layer and the minimum.
    When ``protected_min`` is not given, its default (10) is lowered to the smallest cap, so
    small caps alone (``MEMORY_RETENTION_SOCIAL_MAX=3``) stay valid.

    Raises:
        RetentionViolationError: An explicit ``protected_min`` exceeds a cap.
    """

    semantic_max: Annotated[StrictInt, Field(ge=1, le=10_000_000)] | None = 400
    social_max: Annotated[StrictInt, Field(ge=1, le=10_000_000)] | None = 300
    procedural_max: Annotated[StrictInt, Field(ge=1, le=10_000_000)] | None = 250
    protected_min: Annotated[StrictInt, Field(ge=0, le=10_000_000)] = 10
    """Records of each capped layer that compaction never prunes (the K highest decayed
    scores); every cap must be at least this."""

    @model_validator(mode="after")
    def _check_protected_min(self) -> RetentionPolicy:
        caps = {"semantic_max": self.semantic_max, "social_max": self.social_max,
                "procedural_max": self.procedural_max}
        low = {name: cap for name, cap in caps.items() if cap is not None
               and cap < self.protected_min}
        if not low:
            return self
        if "protected_min" not in self.model_fields_set:  # only the default: fit the caps
            self.__dict__["protected_min"] = min(low.values())
            return self
        name, cap = min(low.items(), key=lambda item: (item[1], item[0]))
        layer = name.removesuffix("_max")
        raise RetentionViolationError(
            f"retention_policy.{name}={cap} is below protected_min={self.protected_min}: the "
            f"{layer} layer could never keep its {self.protected_min} protected records; raise "
            f"{name} to at least {self.protected_min} or lower protected_min",
            details={"field": f"retention_policy.{name}", "layer": layer, "cap": cap,
                     "protectedMin": self.protected_min},
        )


_EMOTION_LEXICON = (
    "afraid", "angry", "attack", "attacked", "betray", "betrayed", "blood", "cried", "danger",
    "dead", "death", "died", "fear", "fight", "fire", "furious", "grief", "happy", "hate",
    "hurt", "kill", "killed", "love", "murder", "panic", "rage", "robbed", "scared", "screamed",
    "stole", "terrified", "thank", "threat", "threatened", "wounded",
)


class ImportanceSettings(_ConfigModel):
    """The heuristic importance model used when a caller gives no importance (index 4).

    importance = clamp01(base + emotion_weight*emotion + novelty_weight*novelty
    + flag_weight*flagged), where emotion is the share of lexicon hits (saturating at
    ``emotion_saturation`` hits, exclamation marks count as half a hit) and novelty the share
    of the text's words the agent has not seen among its last ``novelty_vocab_max`` words.
    """

    base: Annotated[float, Field(ge=0.0, le=1.0)] = 0.2
    emotion_weight: Annotated[float, Field(ge=0.0, le=1.0)] = 0.4
    novelty_weight: Annotated[float, Field(ge=0.0, le=1.0)] = 0.25
    flag_weight: Annotated[float, Field(ge=0.0, le=1.0)] = 0.15
    emotion_saturation: Annotated[float, Field(gt=0.0, le=100.0)] = 2.0
    emotion_lexicon: tuple[str, ...] = _EMOTION_LEXICON
    novelty_vocab_max: Annotated[StrictInt, Field(ge=16, le=1_000_000)] = 4096
    novelty_min_word_len: Annotated[StrictInt, Field(ge=1, le=32)] = 4


DEFAULT_EMBED_UNITS = 20_000
"""``tick_costs.embed`` for a provider that declares no ``tick_cost_units`` (100 µs/text)."""


class TickCosts(_ConfigModel):
    """The tick's cost model: what each kind of maintenance work costs, in work units.

    ``tick(now, budget_ms=B)`` may spend ``B * work_units_per_ms`` units (200,000 per ms by
    default: one unit is 5 ns of the reference machine, a 2-core x86-64 at about 3 GHz). The
    defaults are the reference machine's measured cost of each kind of work, taken inside a
    host loop (caches cold from the frame's ingest and retrieval), with some headroom;
    ``benchmarks/bench_hostloop.py::test_tick_cost_model_calibration`` prints the measured
    µs per unit of each kind on yours. Work is counted, never timed, so the same calls do
    the same work on every machine; a slower machine lowers ``work_units_per_ms`` in
    proportion. An item of work is started only when it fits in what is left of the budget,
    except the tick's first item (``maintenance.budget``), so a tick overshoots by at most
    one item; the largest, with the default settings, is a summarization check that
    schedules a full batch (``summary_check + summary_task + 25 * summary_select``).
    """

    tick: PosInt = 40_000
    """Per tick, whatever it does: the pressure poll, the survey's numpy passes, the
    summarization time-outs, the backlog figures and the report: about 200 µs (measured
    185-220 µs with cold caches)."""
    agent: PosInt = 80
    """Per agent per tick: its share of the survey of what each agent is due (expiry,
    summary, compaction, index), vectorized over the store's survey matrix, and the
    next-check look-up of the agents old enough for a summary: about 0.4 µs (measured
    0.1 µs idle, 0.28 µs with every agent old enough, cold caches)."""
    event: PosInt = 200
    """Per ``memory:decay:applied`` event a tick emits (one per agent with records, only
    when someone listens), built and published: about 1 µs. The events of other work are
    part of that work's cost."""
    scan: PosInt = 6_000
    """Per vectorized pass over one agent's columns (a TTL expiry scan, a compaction layer's
    selection), plus ``scan_slot`` per live record: about 30 µs + 5 ns per record (a
    compaction of one agent measured 135 µs cold with two removals, 40 µs warm)."""
    scan_slot: PosInt = 1
    """Per live record of a vectorized pass over an agent's columns."""
    expire: PosInt = 600
    """Per record a TTL removes, with its event: about 3 µs."""
    prune: PosInt = 2_000
    """Per record compaction prunes from a layer over its cap, with its event: about 10 µs."""
    embed: PosInt | None = None
    """Per text (re-)embedded by a tick. ``None``: the provider's own ``tick_cost_units``
    (the hashing embedder declares 2,000, about 10 µs), else :data:`DEFAULT_EMBED_UNITS`.
    A real model costs far more: measure it with ``f09-memory calibrate-embedder``."""
    embed_apply: PosInt = 200
    """Per vector an async embedding job attaches at a tick: about 1 µs (plus the wait for
    the worker, which the host sizes with ``embedding_latency_ms``)."""
    embed_apply_agent: PosInt = 2_000
    """Per agent a tick's async embedding jobs attach vectors to (its records looked up and
    checked, one block stored, flags and revisions set): about 10 µs (measured in the host
    loop: 12.7 µs per agent for 2.7 vectors, cold caches). A crowd's jobs touch many agents
    with a few vectors each, so this term, not ``embed_apply``, is most of their cost."""
    index_insert: PosInt = 100_000
    """Per vector inserted into an HNSW index being built: about 0.5 ms."""
    index_insert_exact: PosInt = 200
    """Per vector copied into an exact index being built: about 1 µs."""
    summary_check: PosInt = 10_000
    """Per summarization check of a due agent (its eligible records selected, column-wise,
    whether or not a task comes of it): about 50 µs (measured in the host loop: median
    38 µs, p90 86 µs)."""
    summary_task: PosInt = 20_000
    """Per summarization task a check schedules (the task, its id, its queued event), on
    top of ``summary_select`` per source: about 100 µs. A full batch of 25 sources with its
    check: 70,000 units, 350 µs (measured in the host loop: median 160 µs, p90 280 µs)."""
    summary_select: PosInt = 1_600
    """Per source a summary task takes (selection heap, snapshot of content and tags): about
    8 µs."""
    summary_heuristic: PosInt = 2_000
    """Per source of a local (heuristic) summary: key terms, text, coverage: about 10 µs
    (measured in the host loop: 220 µs for 24 sources)."""
    summary_apply: PosInt = 3_600
    """Per source retired when a summary is applied (plus one ``summary_store``): about
    18 µs (a summary of 24 sources measured 550 µs in the host loop, its store included)."""
    summary_store: PosInt = 24_000
    """Per summary record stored (redaction, embedding, events): about 120 µs."""
    mine_slice: PosInt = 40_000
    """Per mining slice, whatever it mines: the pending queue, the agents' order, the
    slice's batched pattern-table and cursor writes, its code cold: about 200 µs (a
    one-record slice measured 280 µs cold, agent and record included)."""
    mine_agent: PosInt = 6_000
    """Per agent a mining slice visits (its pending keys, cursor and chain read, written
    back with the slice's batched table writes): about 30 µs."""
    mine_record: PosInt = 2_500
    """Per record the procedural miner reads (an action's attributes parsed, its chain
    extended): about 12.5 µs (measured 5-10 µs)."""
    mine_pattern: PosInt = 1_500
    """Per n-gram the miner counts (canonical key, sha256 id, count, the record check):
    about 7.5 µs (measured 4-6 µs)."""
    mine_store: PosInt = 24_000
    """Per procedural record the miner creates or reinforces through the writer
    (validation, redaction, store or update, events): about 120 µs (measured 116 µs in
    mining ticks). A mined record is one item of at most ``mine_record + (max_n - 1) *
    (mine_pattern + mine_store)`` units (0.27 ms with the default ``max_n=3``); a slice
    runs only when ``mine_slice + mine_agent + mine_record`` (0.24 ms) fits."""


class MemoryConfig(_ConfigModel):
    """All engine settings. Field names are snake_case; JSON uses the spec's camelCase.

    Spec fields (section 6, defaults of section 21): ``episodic_window`` (ms),
    ``episodic_max``, ``summarization_batch_size``, ``summarization_min_interval_ms``,
    ``decay_half_life_ms``, ``importance_boost``, ``throttle_compression_ratio``,
    ``embedding_dim``, ``max_context_tokens``, ``redact_patterns``, ``retention_policy``.
    The rest are this engine's additions, each documented on its field. Every duration and
    count is below ``2**62`` (logical time, see ``f09_memory._validate``), so a time plus a
    duration fits int64.

    Raises:
        ConfigInvalidError: A value is out of range (the message names field and range).
        RedactionPatternInvalidError: A custom redaction pattern is invalid.
    """

    episodic_window: Duration = 900_000
    episodic_max: Annotated[StrictInt, Field(ge=1, le=10_000_000)] = 1200
    summarization_batch_size: Annotated[StrictInt, Field(ge=2, le=10_000)] = 25
    summarization_min_interval_ms: Duration = 60_000
    decay_half_life_ms: PosInt = 3_600_000
    importance_boost: Annotated[float, Field(ge=1.0, le=100.0)] = 2.5
    throttle_compression_ratio: Annotated[float, Field(gt=0.0, le=1.0)] = 0.55
    embedding_dim: Annotated[StrictInt, Field(ge=2, le=8192)] = 384
    max_context_tokens: Annotated[StrictInt, Field(ge=1, le=10_000_000)] = 1800
    redact_patterns: tuple[str, ...] = DEFAULT_PATTERNS
    retention_policy: RetentionPolicy = Field(default_factory=RetentionPolicy)

    # --- additions -------------------------------------------------------------------------
    redaction_mode: bool = True
    """ON (True): everything a caller stores is redacted at ingest (content, tags, source
    event, metadata attribute keys and string values, social and procedural ids, claims) and
    agent ids holding private data are refused; prompts to LLMs are redacted either way."""
    redaction_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    """The secret that keys placeholders (HMAC-SHA256; env ``MEMORY_REDACTION_KEY``), at
    least 16 characters. Never dumped, shown or snapshotted: only its id
    (``redaction_key_id``) is. ``None``: unkeyed placeholders (sha256, reversible by brute
    force for short values), with a warning logged once per process."""
    redaction_key_id: Annotated[str, Field(pattern=r"^[0-9a-f]{16}$")] | None = None
    """The public id of ``redaction_key`` (set from the key; see ``redaction.keys.key_id``).
    Kept in snapshots and the state hash's config fingerprint; a config that has an id but
    no key (a snapshot's) cannot build an engine until the same key is given."""
    redaction_salt: str = ""
    """Deprecated (use ``redaction_key``): mixed into every placeholder, but stored in clear
    in snapshots, so it protects nothing. Kept so old configs and snapshots load unchanged."""
    chars_per_token: Annotated[float, Field(gt=0.5, le=32.0)] = 4.0
    """The default token estimator: ceil(len(text) / chars_per_token)."""
    score_quantum: Annotated[StrictInt, Field(ge=1_000, le=1_000_000_000_000)] = 1_000_000_000
    """Scores are rounded to integers of 1/score_quantum before ordering and hashing."""
    max_records_per_agent: PosInt = 1_000_000
    """Hard ceiling of live records per agent: an ingest beyond it raises
    MEMORY_CAPACITY_EXCEEDED."""

    # size limits of one record: an input past one raises MEMORY_INPUT_INVALID naming it
    max_content_chars: Annotated[StrictInt, Field(ge=1, le=10_000_000)] = 65_536
    """Longest content of one record, in characters (split longer texts)."""
    max_agent_id_chars: Annotated[StrictInt, Field(ge=1, le=4_096)] = 256
    """Longest agent id, in characters."""
    max_tag_chars: Annotated[StrictInt, Field(ge=1, le=65_536)] = 256
    """Longest tag, in characters (checked before redaction)."""
    max_tags_per_record: Annotated[StrictInt, Field(ge=1, le=100_000)] = 256
    """Most tags on one record (its own and its metadata's together)."""
    max_source_event_chars: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 1_024
    """Longest ``source_event`` (and each ``metadata.source_ref_ids`` entry), in characters."""
    max_attribute_chars: Annotated[StrictInt, Field(ge=1, le=10_000_000)] = 4_096
    """Longest attribute key or string value (and procedural ``pattern_id``), in characters;
    a social ``other_agent_id`` has the agent id limit."""
    max_attributes: Annotated[StrictInt, Field(ge=1, le=100_000)] = 64
    """Most ``metadata.attributes`` entries on one record."""
    dedup_window_ms: Duration = 0
    """Ingest dedup: a record whose normalized content (casefolded, whitespace collapsed,
    after redaction) equals a live record of the same agent and layer created less than
    this long ago reinforces that record (importance + ``dedup_importance_step``, recency
    anchor moved to now) instead of adding a copy. 0 turns dedup off."""
    dedup_importance_step: Annotated[float, Field(ge=0.0, le=1.0)] = 0.05
    """Importance added to a record each time ingest dedup reinforces it (capped at 1)."""
    work_units_per_ms: PosInt = 200_000
    """Records of maintenance work that ``tick`` counts as one millisecond of budget; slicing
    by counted work (not the wall clock) keeps ticks deterministic on any machine."""
    bus_handler_errors: Literal["isolate", "propagate"] = "isolate"
    """What a raising event handler does: ``isolate`` logs and records it and dispatch goes
    on; ``propagate`` re-raises it after the state change and all other handlers are done."""
    importance: ImportanceSettings = Field(default_factory=ImportanceSettings)
    scoring: ScoringTables = Field(default_factory=ScoringTables)
    perception: PerceptionSettings = Field(default_factory=PerceptionSettings)
    """Engine-event ingestion: routing rules by kind, perception radius."""
    spatial: SpatialSettings = Field(default_factory=SpatialSettings)
    """The spatial layer: grid cell size, navigation proximity scale, physics-event flags."""

    # embedding and vector index (index 6, 7)
    embedding_batch_size: Annotated[StrictInt, Field(ge=1, le=100_000)] = 64
    embedding_mode: Literal["sync", "async"] = "sync"
    """``sync``: ``ingest`` embeds its records before it returns. ``async``: a worker embeds
    them and the first ``tick`` at or after ``ingest time + embedding_latency_ms`` attaches
    the vectors (waiting for the worker there if needed): ingest never waits for the model,
    and results depend on logical time only."""
    embedding_latency_ms: Duration = 0
    """Async mode: logical delay before a tick attaches an ingest's vectors."""
    exact_index_max: PosInt = 20_000
    """Agents with more embedded records than this use the HNSW index instead of exact scan."""
    hnsw_m: Annotated[StrictInt, Field(ge=2, le=256)] = 16
    hnsw_ef_construction: Annotated[StrictInt, Field(ge=8, le=4096)] = 200
    hnsw_ef: Annotated[StrictInt, Field(ge=8, le=4096)] = 64
    semantic_preselect_threshold: PosInt = 5_000
    """Agents with more candidates than this are preselected (the index's nearest records)
    and completed exactly; below it every candidate is scored."""
    semantic_preselect_min_ratio: Annotated[StrictInt, Field(ge=0, le=100_000)] = 48
    """Preselect only when the candidates are at least this many times the index search's
    depth: one index result costs about 16 exact rows, the completion scores 2-3 rows per
    result and has a fixed cost, so below that scoring every candidate is faster (measured
    on 2 cores, depth 499: 5.2 against 6.2 ms at 20k candidates, about even at 40k). Only an
    HNSW index preselects unless this is 0 (then every index does, as before)."""
    semantic_preselect_k: Annotated[StrictInt, Field(ge=1, le=100_000)] = 128
    """The least depth of a preselection's index search (it is sized from what the budget
    packs: four records per record packed, times sqrt(candidates / 20,000) above that)."""
    semantic_preselect_k_max: Annotated[StrictInt, Field(ge=1, le=100_000)] = 4_096
    """The deepest index search of a preselection: a loose similarity bound (many records
    about as similar as the K-th) doubles the depth while that costs less than scoring the
    records the bound lets through."""
    semantic_exact_extra_max: Annotated[StrictInt, Field(ge=0, le=10_000_000)] = 32_768
    """After preselection, left-out candidates that could still change the bundle (their
    score bound passes the entry threshold of their size) are scored exactly, at most this
    many per retrieval, highest bound first: the bundle equals full scoring unless the bound
    lets more through (then it may differ). 0 turns the check off."""
    tick_costs: TickCosts = Field(default_factory=TickCosts)
    """The tick's cost model (work units per kind of work)."""
    social: SocialSettings = Field(default_factory=SocialSettings)
    """The social ledger's rates and notable-change thresholds (``config.social``)."""
    procedural: ProceduralSettings = Field(default_factory=ProceduralSettings)
    """The procedural pattern miner (index 14, ``f09_memory.procedural``)."""
    tick_behind_after: Annotated[StrictInt, Field(ge=1, le=1_000_000)] = 8
    """``memory:tick:behind`` is emitted when the tick backlog has grown this many ticks in
    a row (and ``TickReport.behind`` is then True)."""
    hard_cap_slack: Annotated[float, Field(ge=0.0, le=1.0)] | None = 0.1
    """Capped layers may exceed their cap between ticks by this share of the cap (at least
    one record); an ingest that would pass ``cap + slack`` evicts down to the cap at once,
    lowest retention score first (the compaction order). ``None``: no limit at ingest, only
    ticks compact (a bulk load that compaction trims later)."""

    category_layers: dict[
        Literal["decision", "preference", "fact", "commitment", "blocker", "open_thread",
                "session_snapshot"], MemoryLayer] = Field(default_factory=dict)
    """Layer per agent-runtime category (``f09_memory.runtime``); a category not listed
    uses ``runtime.CATEGORY_LAYERS``."""
    typed_memory_layers: dict[str, MemoryLayer] = Field(default_factory=dict)
    """Layer per typed-memory type (user, feedback, project, reference) for
    ``engine.ingest_typed``; a type not listed uses the extraction module's default."""

    # summarization (index 10)
    summarization_keep_recent: Annotated[StrictInt, Field(ge=0, le=10_000_000)] = 50
    """The K most recent episodic records of an agent are never summarized (spec section 8)."""
    summarization_max_importance: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    """Only episodic records whose decayed importance is at most this are summarized."""
    summarization_min_batch: Annotated[StrictInt, Field(ge=1, le=10_000)] = 2
    """Fewer eligible records than this (or than the batch size, if smaller): no task."""
    summarization_min_coverage: Annotated[float, Field(ge=0.0, le=1.0)] = 0.5
    """Quality gate: an LLM summary naming fewer than this share of the sources' key terms
    (dominant entities and tags) is replaced by the local heuristic summary."""
    summarization_coverage_terms: Annotated[StrictInt, Field(ge=1, le=100)] = 8
    """How many key terms of the sources the coverage check and heuristic summary use."""
    summarization_temperature: Annotated[float, Field(ge=0.0, le=2.0)] = 0.2
    """Sampling temperature passed to ``LLMClient.complete`` for summaries."""
    summarization_max_tokens: Annotated[StrictInt, Field(ge=16, le=100_000)] = 400
    """Completion token limit passed to ``LLMClient.complete`` for summaries."""
    summarization_timeout_ms: PosInt | None = 30_000
    """How long a summarization task may wait for the LLM: ``summarize_pending`` gives each
    call this much wall time, and a polled task not completed by ``poll time + timeout`` in
    logical time is finished by ``tick`` with the heuristic summary. A late answer is then
    ignored (``memory:summarization:late``). ``None``: wait forever."""
    summarization_grouping_gap_ms: Duration = 300_000
    """A record with no tag and no entity joins the group whose last event is this close."""
    summarization_event_max_chars: Annotated[StrictInt, Field(ge=16, le=100_000)] = 500
    """Longest event line of the summary prompt, after redaction (longer lines are clipped)."""
    summarization_heuristic_max_chars: Annotated[StrictInt, Field(ge=64, le=100_000)] = 600
    """Longest local (heuristic) summary, in characters."""

    @model_validator(mode="after")
    def _check_ledger_kinds(self) -> MemoryConfig:
        perception = self.perception
        kinds = self.social.kind_weights
        rules = [(f"rules[{kind}]", perception.rule(kind))
                 for kind in sorted({*perception.rules, *DEFAULT_EVENT_RULES})]
        for name, rule in [*rules, ("default_rule", perception.default_rule)]:
            if rule is not None and rule.ledger == "mutual" and rule.ledger_kind not in kinds:
                raise ConfigInvalidError(
                    f"perception.{name}.ledger_kind is not a key of social.kind_weights: "
                    "add the kind there or use one of its keys",
                    details={"field": "perception"})
        return self

    @model_validator(mode="after")
    def _check_patterns(self) -> MemoryConfig:
        compile_patterns(self.redact_patterns)  # raises MEMORY_REDACTION_PATTERN_INVALID
        secret = self.redaction_key
        if secret is None:
            return self
        key = secret.get_secret_value()
        if len(key) < MIN_KEY_CHARS:
            raise ConfigInvalidError(
                f"redaction_key is shorter than {MIN_KEY_CHARS} characters; use a random "
                "string (e.g. secrets.token_urlsafe(32))",
                details={"field": "redaction_key", "minimum": MIN_KEY_CHARS})
        found = key_id(key.encode("utf-8"))
        if self.redaction_key_id is not None and self.redaction_key_id != found:
            raise ConfigInvalidError(
                "redaction_key is not the key this config (or snapshot) was made with: its "
                "redaction_key_id differs; pass the original key (placeholders made under "
                "another key would no longer match)",
                details={"field": "redaction_key"})
        self.__dict__["redaction_key_id"] = found
        return self

    def replace(self, **changes: object) -> MemoryConfig:
        """Return a validated copy with ``changes`` applied (snake_case or camelCase keys).

        Raises:
            ConfigInvalidError: A changed value is out of range.
        """
        data = self.model_dump(by_alias=True)
        aliases = {name: field.alias or name for name, field in MemoryConfig.model_fields.items()}
        for key, value in changes.items():
            data[aliases.get(key, key)] = value
        if "redactionKey" in data:  # a new key: its id follows from it
            data.pop("redactionKeyId", None)
        elif self.redaction_key is not None:  # never dumped: carried over by hand
            data["redactionKey"] = self.redaction_key
        return MemoryConfig.parse(data)

    def with_redaction_key(self, key: str | SecretStr | None = None, *,
                           environ: Mapping[str, str] | None = None) -> MemoryConfig:
        """This config with its redaction key restored (a snapshot's config holds only its id).

        A config with a ``redaction_key_id`` takes ``key``, or when ``key`` is ``None`` the
        ``MEMORY_REDACTION_KEY`` variable of ``environ`` (default ``os.environ``); the key
        must be the one the id was made from. A config without an id is returned as it is
        when ``key`` is ``None`` (the variable is then ignored: its placeholders are
        unkeyed, and a key cannot be added to placeholders already stored).

        Raises:
            ConfigInvalidError: The key is missing or is not the config's key, or a key was
                given for a config made without one (messages never show a key).
        """
        if self.redaction_key_id is None:
            if key is None:
                return self
            raise ConfigInvalidError(
                "redaction_key was given, but this config (or snapshot) was made without a "
                "redaction key: its stored placeholders are unkeyed and cannot be re-keyed; "
                "load it without redaction_key", details={"field": "redaction_key"})
        if key is None:
            env = os.environ if environ is None else environ
            key = env.get(REDACTION_KEY_ENV, "").strip() or None
            if key is None:
                raise ConfigInvalidError(
                    "this config (or snapshot) was made with a redaction key and none was "
                    f"given: pass redaction_key=... or set {REDACTION_KEY_ENV} to that key",
                    details={"field": "redaction_key"})
        if self.redaction_key is not None and key_bytes(key) == key_bytes(self.redaction_key):
            return self
        return MemoryConfig.parse({**self.model_dump(by_alias=True), "redactionKey": key})

    @classmethod
    def from_env(
        cls, environ: dict[str, str] | None = None, *, env_file: str | None = None
    ) -> MemoryConfig:
        """Build a config from the ``MEMORY_*`` variables of spec section 21.

        Args:
            environ: Variables to read instead of ``os.environ`` (tests, embedding hosts).
            env_file: Optional dotenv file read as well (``os.environ`` wins over it).

        Returns:
            The validated config; unset variables keep their defaults.

        Raises:
            ConfigInvalidError: A variable is not a number, or out of range (names the
                variable and the accepted range).
        """
        from f09_memory.config.env import read_env

        return cls.parse(read_env(environ, env_file=env_file))
