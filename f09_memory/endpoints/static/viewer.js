// Memory Viewer: a static page over the JSON routes of f09_memory's HTTP endpoints.
//
// Plain modern JavaScript, no framework, no build step. Every string that comes from the
// server (record content, ids, tags, agent ids, error details) is rendered through text
// nodes (textContent / createTextNode), never parsed as HTML: memory content may be hostile.
"use strict";

(() => {
  const LAYERS = ["episodic", "semantic", "procedural", "social", "spatial", "system"];
  const TERMS = ["importance", "recency", "semantic", "structural", "proximity"];
  const AUTO_REFRESH_MS = 2000;
  const CANDIDATE_PAGE = 100;

  const state = {
    agents: [],            // AgentStats from /api/agents
    agentId: null,         // the selected agent
    layer: "",             // layer filter of the records ("" = all)
    offset: 0,
    limit: 100,
    total: 0,
    records: [],           // the shown page of the snapshot
    baseVersion: null,     // the version of the last snapshot shown (the diff's `since`)
    diff: null,            // the last MemoryDiff of this agent, highlighted until the next refresh
    added: new Set(),
    changed: new Map(),    // id -> [field names]
    scores: null,          // id -> {score, rank, included} from the last explain of this agent
    maxScore: 0,
    candidates: [],
    candidatesShown: 0,
    redaction: null,       // true / false / null (unknown)
    token: null,           // the bearer token, kept in memory only after it was accepted
    recordsSeq: 0,         // the latest records load: an older answer arriving late is dropped
    refreshing: null,      // the running refresh (a promise), or null
    refreshAgain: false,   // a refresh was asked for while one ran
    timer: null,
  };

  const $ = (id) => document.getElementById(id);

  // --- DOM helpers: text only -------------------------------------------------------------

  /** Build an element. `props`: className, text, title, dataset {k: v}, attrs {name: value}
   * for fixed attribute names chosen here (never from data). Children: nodes or strings
   * (strings become text nodes). */
  function el(tag, props, ...children) {
    const node = document.createElement(tag);
    if (props) {
      if (props.className) node.className = props.className;
      if (props.text !== undefined && props.text !== null) node.textContent = String(props.text);
      if (props.title !== undefined && props.title !== null) node.title = String(props.title);
      if (props.dataset) {
        for (const [key, value] of Object.entries(props.dataset)) node.dataset[key] = String(value);
      }
      if (props.attrs) {
        for (const [key, value] of Object.entries(props.attrs)) node.setAttribute(key, String(value));
      }
    }
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      node.append(typeof child === "string" || typeof child === "number"
        ? document.createTextNode(String(child)) : child);
    }
    return node;
  }

  const SVG_NS = "http://www.w3.org/2000/svg";
  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  function clamp01(x) {
    const v = Number(x);
    if (!Number.isFinite(v)) return 0;
    return Math.min(1, Math.max(0, v));
  }

  function fmt(x, digits = 2) {
    const v = Number(x);
    return Number.isFinite(v) ? v.toFixed(digits) : "–";
  }

  function fmtInt(x) {
    const v = Number(x);
    return Number.isFinite(v) ? v.toLocaleString("en-US") : "–";
  }

  /** A horizontal bar of `fraction` (0..1) labelled with `label` and the shown value. */
  function bar(name, fraction, shown, kind) {
    const fill = el("span", { className: "bar-fill" });
    fill.style.width = `${(clamp01(fraction) * 100).toFixed(1)}%`;
    const track = el("span", {
      className: `bar bar-${kind || name}`,
      attrs: { role: "meter", "aria-valuemin": 0, "aria-valuemax": 1,
               "aria-valuenow": clamp01(fraction).toFixed(3), "aria-label": name },
    }, fill);
    return el("span", { className: "bar-cell" }, track, el("span", { className: "num", text: shown }));
  }

  function show(node, visible) { node.hidden = !visible; }

  function showError(node, err) {
    if (!err) { node.textContent = ""; show(node, false); return; }
    node.textContent = describeError(err);
    show(node, true);
  }

  function describeError(err) {
    if (err instanceof ApiError) {
      const head = err.code ? `${err.code} (${err.status})` : `HTTP ${err.status}`;
      return `${head}: ${err.detail || err.title || "request failed"}`;
    }
    return `Request failed: ${err && err.message ? err.message : String(err)}`;
  }

  // --- API --------------------------------------------------------------------------------

  class ApiError extends Error {
    constructor(status, problem) {
      super(problem.detail || problem.title || `HTTP ${status}`);
      this.status = status;
      this.title = typeof problem.title === "string" ? problem.title : "";
      this.detail = typeof problem.detail === "string" ? problem.detail : "";
      this.code = typeof problem.code === "string" ? problem.code : "";
    }
  }

  async function api(path, options) {
    const response = await fetch(path, {
      credentials: "same-origin", cache: "no-store", ...options,
      headers: { Accept: "application/json", ...((options && options.headers) || {}) },
    });
    let body = null;
    const text = await response.text();
    if (text) {
      try { body = JSON.parse(text); } catch (_) { body = null; }
    }
    if (!response.ok) {
      throw new ApiError(response.status, body && typeof body === "object" ? body : {});
    }
    return body;
  }

  const enc = encodeURIComponent;
  function query(params) {
    const parts = [];
    for (const [key, value] of Object.entries(params)) {
      if (value === null || value === undefined || value === "") continue;
      parts.push(`${enc(key)}=${enc(String(value))}`);
    }
    return parts.length ? `?${parts.join("&")}` : "";
  }
  const agentPath = (id, tail) => `api/agents/${enc(id)}/${tail}`;

  // --- agents -----------------------------------------------------------------------------

  async function loadAgents() {
    const data = await api("api/agents");
    state.agents = Array.isArray(data.agents) ? data.agents : [];
    $("now").textContent = fmtInt(data.now);
    $("version").textContent = fmtInt(data.version);
    $("agent-count").textContent = fmtInt(state.agents.length);
    renderAgents();
  }

  function renderAgents() {
    const list = $("agents");
    const max = Math.max(1, ...state.agents.map((a) => Number(a.records) || 0));
    const items = state.agents.map((agent) => {
      const selected = agent.agentId === state.agentId;
      const mix = el("span", { className: "layer-mix", attrs: { "aria-hidden": "true" } });
      const byLayer = agent.byLayer || {};
      for (const layer of LAYERS) {
        const n = Number(byLayer[layer]) || 0;
        if (!n) continue;
        const part = el("span", { className: `mix mix-${layer}`, title: `${layer}: ${n}` });
        part.style.width = `${((n / max) * 100).toFixed(2)}%`;
        mix.append(part);
      }
      const button = el("button", {
        className: "agent",
        dataset: { testid: "agent-item", agentId: agent.agentId },
        attrs: { type: "button", "aria-pressed": selected ? "true" : "false" },
        title: LAYERS.filter((l) => byLayer[l]).map((l) => `${l}: ${byLayer[l]}`).join(", "),
      },
      el("span", { className: "agent-id", text: agent.agentId }),
      el("span", { className: "count", dataset: { testid: "agent-count" }, text: fmtInt(agent.records) }),
      mix);
      button.addEventListener("click", () => selectAgent(agent.agentId));
      return el("li", null, button);
    });
    list.replaceChildren(...items);
    show($("agents-empty"), state.agents.length === 0);
  }

  function currentAgent() {
    return state.agents.find((a) => a.agentId === state.agentId) || null;
  }

  async function selectAgent(agentId) {
    if (agentId === state.agentId) return;
    state.agentId = agentId;
    state.offset = 0;
    state.layer = "";
    state.baseVersion = null;
    clearDiff();
    clearExplain();
    renderAgents();
    renderLayerFilter();
    $("explain-submit").disabled = false;
    await guarded(() => loadRecords());
  }

  // --- records ----------------------------------------------------------------------------

  function renderLayerFilter() {
    const select = $("layer-filter");
    const agent = currentAgent();
    const byLayer = (agent && agent.byLayer) || {};
    const options = [el("option", { text: "all layers", attrs: { value: "" } })];
    for (const layer of LAYERS) {
      const n = Number(byLayer[layer]) || 0;
      if (!n && layer !== state.layer) continue;
      options.push(el("option", { text: `${layer} (${fmtInt(n)})`, attrs: { value: layer } }));
    }
    select.replaceChildren(...options);
    select.value = state.layer;
  }

  async function loadRecords() {
    if (!state.agentId) return;
    const agentId = state.agentId;
    const seq = ++state.recordsSeq;
    const t0 = performance.now();
    const snap = await api(agentPath(agentId, "snapshot") + query({
      layer: state.layer, limit: state.limit, offset: state.offset,
    }));
    if (agentId !== state.agentId || seq !== state.recordsSeq) return;  // a later load won
    state.total = Number(snap.total) || 0;
    state.baseVersion = snap.version;
    if (state.offset > 0 && state.offset >= state.total) {  // the page emptied: go back
      state.offset = Math.max(0, Math.floor((state.total - 1) / state.limit) * state.limit);
      return loadRecords();
    }
    state.records = Array.isArray(snap.records) ? snap.records : [];
    const t1 = performance.now();
    renderRecords(state.records);
    const table = $("records");
    table.dataset.fetchMs = (t1 - t0).toFixed(1);
    table.dataset.renderMs = (performance.now() - t1).toFixed(1);
    table.dataset.version = String(snap.version);
  }

  function renderRecords(records) {
    const table = $("records");
    $("records-agent").textContent = state.agentId ? `· ${state.agentId}` : "";
    const groups = new Map();
    for (const record of records) {
      const layer = String(record.layer);
      if (!groups.has(layer)) groups.set(layer, []);
      groups.get(layer).push(record);
    }
    const order = [...groups.keys()].sort((a, b) => {
      const ia = LAYERS.indexOf(a), ib = LAYERS.indexOf(b);
      return (ia < 0 ? 99 : ia) - (ib < 0 ? 99 : ib) || (a < b ? -1 : a > b ? 1 : 0);
    });
    const bodies = order.map((layer) => {
      const rows = groups.get(layer);
      const head = el("tr", { className: "group-row" }, el("th", {
        attrs: { scope: "rowgroup", colspan: 6 },
      }, el("span", { className: `swatch mix-${layer}`, attrs: { "aria-hidden": "true" } }),
      el("span", { className: "group-name", text: layer }),
      el("span", { className: "muted", dataset: { testid: "layer-group-count" },
        text: ` ${fmtInt(rows.length)} on this page` })));
      const body = el("tbody", { dataset: { testid: "layer-group", layer } }, head);
      const frag = document.createDocumentFragment();
      for (const record of rows) frag.append(recordRow(record));
      body.append(frag);
      return body;
    });
    for (const old of table.querySelectorAll("tbody")) old.remove();
    table.append(...bodies);
    const empty = $("records-empty");
    empty.textContent = state.agentId ? "No records." : "Select an agent.";
    show(empty, records.length === 0);
    renderPager(records.length);
  }

  function recordRow(record) {
    const id = String(record.id);
    let mark = "";
    let diffKind = "";
    let markTitle = "";
    if (state.added.has(id)) {
      diffKind = "added"; mark = "+"; markTitle = "added since the last refresh";
    } else if (state.changed.has(id)) {
      diffKind = "changed"; mark = "~";
      markTitle = `changed since the last refresh: ${state.changed.get(id).join(", ")}`;
    }
    const score = state.scores ? state.scores.get(id) : undefined;
    const scoreCell = score
      ? bar("score", state.maxScore > 0 ? score.score / state.maxScore : 0,
        `${fmt(score.score, 3)}${score.rank ? ` #${score.rank}` : ""}`, score.included ? "score" : "score-out")
      : el("span", { className: "muted", text: "–", title: "Run an explain to score the records" });
    const tags = Array.isArray(record.tags) ? record.tags : [];
    const row = el("tr", {
      className: diffKind ? `row-${diffKind}` : "",
      dataset: { testid: "record-row", recordId: id, layer: String(record.layer), diff: diffKind },
    },
    el("td", { className: `mark mark-${diffKind}`, title: markTitle },
      mark ? el("span", { attrs: { "aria-label": markTitle }, text: mark }) : null),
    el("td", { className: "content-cell" },
      el("div", { className: "content", dataset: { testid: "record-content" }, text: record.content }),
      el("div", { className: "meta" },
        el("code", { className: "rid", text: id }),
        record.status !== "active"
          ? el("span", { className: `badge status-${String(record.status)}`, text: record.status }) : null,
        record.redacted ? el("span", { className: "badge badge-redacted", text: "redacted" }) : null,
        diffKind === "changed"
          ? el("span", { className: "badge badge-changed", text: `changed: ${state.changed.get(id).join(", ")}` })
          : null,
        diffKind === "added" ? el("span", { className: "badge badge-added", text: "new" }) : null,
        ...tags.map((t) => el("span", { className: "tag", text: t })))),
    el("td", null, bar("importance", record.importance, fmt(record.importance))),
    el("td", null, bar("recency", record.recency, fmt(record.recency))),
    el("td", null, scoreCell),
    el("td", { className: "num", text: fmtInt(record.createdAt),
      title: record.expiresAt !== null && record.expiresAt !== undefined
        ? `expires at ${record.expiresAt}` : "no TTL" }));
    return row;
  }

  function renderPager(shown) {
    const from = state.total === 0 ? 0 : state.offset + 1;
    const to = state.offset + shown;
    const info = $("page-info");
    info.textContent = state.agentId
      ? `${fmtInt(from)}–${fmtInt(to)} of ${fmtInt(state.total)}` : "–";
    info.dataset.from = String(from);
    info.dataset.to = String(to);
    info.dataset.total = String(state.total);
    $("page-prev").disabled = !state.agentId || state.offset === 0;
    $("page-next").disabled = !state.agentId || to >= state.total;
  }

  async function page(delta) {
    const next = state.offset + delta * state.limit;
    if (next < 0 || (delta > 0 && next >= state.total)) return;
    state.offset = next;
    await guarded(() => loadRecords());
  }

  // --- diff -------------------------------------------------------------------------------

  function clearDiff() {
    state.diff = null;
    state.added = new Set();
    state.changed = new Map();
    show($("diff-summary"), false);
    $("diff-info").textContent = "Refresh to see what changed.";
    $("removed-list").replaceChildren();
  }

  async function loadDiff() {
    if (!state.agentId || state.baseVersion === null || state.baseVersion === undefined) return;
    const agentId = state.agentId;
    const since = state.baseVersion;
    let diff;
    try {
      diff = await api(agentPath(agentId, "diff") + query({ since }));
    } catch (err) {
      if (err instanceof ApiError && err.status < 500) {
        // The base capture is no longer kept (or another scope): start again from a snapshot.
        clearDiff();
        $("diff-info").textContent = `No diff: ${describeError(err)}`;
        return;
      }
      throw err;
    }
    if (agentId !== state.agentId) return;
    state.diff = diff;
    state.added = new Set((diff.added || []).map((r) => String(r.id)));
    state.changed = new Map((diff.changed || []).map((c) => [
      String(c.id), (c.changes || []).map((f) => String(f.field))]));
    const removed = (diff.removed || []).map(String);
    const summary = $("diff-summary");
    summary.replaceChildren(
      el("span", { className: "d-added", dataset: { testid: "diff-added" },
        text: `+${fmtInt(state.added.size)} added` }), " · ",
      el("span", { className: "d-changed", dataset: { testid: "diff-changed" },
        text: `~${fmtInt(state.changed.size)} changed` }), " · ",
      el("span", { className: "d-removed", dataset: { testid: "diff-removed" },
        text: `−${fmtInt(removed.length)} removed` }),
      el("span", { className: "muted", text: ` since version ${since} (now version ${diff.version})` }));
    summary.dataset.since = String(since);
    summary.dataset.version = String(diff.version);
    show(summary, true);
    $("diff-info").textContent = `Version ${since} → ${diff.version} at now ${fmtInt(diff.now)}: `
      + `${state.added.size} added, ${state.changed.size} changed, ${removed.length} removed.`;
    $("removed-list").replaceChildren(...removed.map((id) =>
      el("li", { dataset: { testid: "removed-id" } }, el("code", { text: id }))));
  }

  // --- search -----------------------------------------------------------------------------

  async function search(event) {
    event.preventDefault();
    const q = $("search-input").value.trim();
    showError($("search-error"), null);
    if (!q) { $("search-results").replaceChildren(); $("search-info").textContent = ""; return; }
    const scoped = $("search-scope").checked && state.agentId;
    try {
      const data = await api(`api/memory/search${query({
        q, limit: 20, agentId: scoped ? state.agentId : null })}`);
      const results = Array.isArray(data.results) ? data.results : [];
      const max = Math.max(1e-9, ...results.map((r) => Number(r.score) || 0));
      $("search-info").textContent = `${results.length} result${results.length === 1 ? "" : "s"}`
        + (scoped ? ` for ${state.agentId}` : " in all agents");
      $("search-results").replaceChildren(...results.map((r) => {
        const rec = r.record || {};
        const agentButton = el("button", { className: "linkish", text: rec.agentId,
          attrs: { type: "button" }, title: "Show this agent's records" });
        agentButton.addEventListener("click", () => guarded(() => selectAgent(String(rec.agentId))));
        return el("li", { dataset: { testid: "search-result", recordId: String(rec.id) } },
          el("div", { className: "content", text: rec.content, title: rec.content }),
          el("div", { className: "meta" }, bar("score", Number(r.score) / max, fmt(r.score, 3)),
            agentButton, el("span", { className: `tag mix-${rec.layer}`, text: rec.layer }),
            el("code", { className: "rid", text: rec.id })));
      }));
    } catch (err) {
      showError($("search-error"), err);
    }
  }

  // --- explain ----------------------------------------------------------------------------

  function clearExplain() {
    state.scores = null;
    state.maxScore = 0;
    state.candidates = [];
    state.candidatesShown = 0;
    show($("explain-result"), false);
    showError($("explain-error"), null);
  }

  async function explain(event) {
    event.preventDefault();
    if (!state.agentId) return;
    showError($("explain-error"), null);
    const body = {
      purpose: $("explain-purpose").value,
      strategy: $("explain-strategy").value,
      maxTokens: Number.parseInt($("explain-max-tokens").value, 10),
    };
    const q = $("explain-query").value.trim();
    if (q) body.query = q;
    const agentId = state.agentId;
    const button = $("explain-submit");
    button.disabled = true;
    try {
      const result = await api(agentPath(agentId, "explain"), {
        method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(body),
      });
      if (agentId !== state.agentId) return;
      renderExplain(result);
      renderRecords(state.records);  // the score bars of the shown page (no new capture)
    } catch (err) {
      showError($("explain-error"), err);
    } finally {
      button.disabled = !state.agentId;
    }
  }

  function renderExplain(result) {
    const candidates = Array.isArray(result.candidates) ? result.candidates : [];
    state.candidates = candidates;
    state.scores = new Map(candidates.map((c) => [String(c.id), {
      score: Number(c.score) || 0, rank: c.rank, included: Boolean(c.included) }]));
    state.maxScore = Math.max(0, ...candidates.map((c) => Number(c.score) || 0));
    const bundle = Array.isArray(result.bundleIds) ? result.bundleIds : [];
    const items = [
      ["Purpose", result.purpose], ["Strategy", result.strategy],
      ["Pressure", result.pressureState], ["Budget", result.budget ?? "none"],
      ["Candidates", result.candidateCount], ["Filtered out", result.filteredCount],
      ["In bundle", bundle.length], ["Tokens", result.totalTokens],
      ["Truncated", result.truncated ? "yes" : "no"],
      ["Compression", result.compressionApplied ? "yes" : "no"],
    ];
    if (result.semanticFallback) items.push(["Semantic fallback", result.semanticFallback]);
    $("explain-summary").replaceChildren(...items.map(([k, v]) => el("div", null,
      el("dt", { text: k }), el("dd", { dataset: { testid: `explain-${k.toLowerCase().replace(/ /g, "-")}` },
        text: v === null || v === undefined ? "–" : String(v) }))));
    const weights = result.weights && typeof result.weights === "object" ? result.weights : {};
    $("term-legend").replaceChildren(...TERMS.filter((t) => t in weights || t !== "proximity").map((t) =>
      el("li", null, el("span", { className: `swatch term-${t}`, attrs: { "aria-hidden": "true" } }),
        `${t} × ${fmt(weights[t] ?? 0, 2)}`)));
    state.candidatesShown = 0;
    $("candidates").dataset.total = String(candidates.length);
    $("candidates-body").replaceChildren();
    moreCandidates();
    show($("explain-result"), true);
  }

  function moreCandidates() {
    const start = state.candidatesShown;
    const slice = state.candidates.slice(start, start + CANDIDATE_PAGE);
    const max = state.maxScore > 0 ? state.maxScore : 1;
    const frag = document.createDocumentFragment();
    for (const c of slice) frag.append(candidateRow(c, max));
    $("candidates-body").append(frag);
    state.candidatesShown = start + slice.length;
    const more = $("candidates-more");
    const left = state.candidates.length - state.candidatesShown;
    more.textContent = `Show ${Math.min(left, CANDIDATE_PAGE)} more (${fmtInt(left)} left)`;
    show(more, left > 0);
  }

  function candidateRow(c, max) {
    const terms = Array.isArray(c.terms) ? c.terms : [];
    const stack = el("span", { className: "stack", attrs: { role: "img", "aria-label":
      terms.map((t) => `${t.key} ${fmt(t.contribution, 3)}`).join(", ") } });
    for (const t of terms) {
      const part = el("span", { className: `seg term-${String(t.key)}`, dataset: { term: String(t.key) },
        title: `${t.key}: ${fmt(t.value, 3)} × ${fmt(t.weight, 2)} = ${fmt(t.contribution, 3)}` });
      part.style.width = `${(clamp01((Number(t.contribution) || 0) / max) * 100).toFixed(2)}%`;
      stack.append(part);
    }
    const outcome = c.included
      ? el("span", { className: "badge badge-in", text: "included" })
      : el("span", { className: "badge badge-out", text: c.excluded ? `excluded: ${c.excluded}` : "not in bundle" });
    return el("tr", {
      className: c.included ? "cand-in" : "cand-out",
      dataset: { testid: "candidate-row", recordId: String(c.id), included: c.included ? "true" : "false",
        excluded: c.excluded || "" },
    },
    el("td", { className: "num", text: c.rank ?? "–" }),
    el("td", { className: "content-cell" },
      el("div", { className: "content", text: c.content }),
      el("code", { className: "rid", text: c.id })),
    el("td", null, el("span", { className: `tag mix-${c.layer}`, text: c.layer })),
    el("td", null, stack),
    el("td", { className: "num", text: fmt(c.score, 3) }),
    el("td", { className: "num", text: c.quantizedScore ?? "–" }),
    el("td", { className: "num", text: c.tokensEstimate ?? "–" }),
    el("td", null, outcome));
  }

  // --- redaction --------------------------------------------------------------------------

  async function loadRedaction() {
    const data = await api("api/redaction");
    setRedaction(Boolean(data.redaction));
  }

  function setRedaction(on) {
    state.redaction = on;
    const button = $("redaction-toggle");
    button.textContent = on ? "ON" : "OFF";
    button.setAttribute("aria-pressed", on ? "true" : "false");
    button.dataset.state = on ? "on" : "off";
    button.title = on ? "Memory text is redacted. Turning it off needs the server's token."
      : "Memory text is shown as stored. Click to redact it again.";
    document.body.classList.toggle("raw", !on);
  }

  function askToken(action) {
    $("token-action").textContent = action;
    showError($("redaction-error"), null);
    show($("token-form"), true);
    $("token-input").focus();
  }

  async function postRedaction(on, token) {
    const data = await api("api/redaction", {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
      body: JSON.stringify({ redaction: on }),
    });
    setRedaction(data && typeof data.redaction === "boolean" ? data.redaction : on);
  }

  async function toggleRedaction() {
    if (state.redaction === null) return;
    const target = !state.redaction;
    if (!target || !state.token) {  // turning it off always asks for the token
      askToken(target ? "on" : "off");
      return;
    }
    try {
      await postRedaction(target, state.token);
      await refresh();
    } catch (err) {
      state.token = null;
      askToken(target ? "on" : "off");
      showError($("redaction-error"), err);
    }
  }

  async function submitToken(event) {
    event.preventDefault();
    const input = $("token-input");
    const token = input.value;
    const target = $("token-action").textContent === "on";
    try {
      await postRedaction(target, token);
      state.token = token;
      input.value = "";
      show($("token-form"), false);
      showError($("redaction-error"), null);
      await refresh();
    } catch (err) {
      showError($("redaction-error"), err);
    }
  }

  // --- plot -------------------------------------------------------------------------------

  async function loadMetrics() {
    const data = await api("api/metrics");
    renderPlot(Array.isArray(data.series) ? data.series : []);
  }

  function renderPlot(series) {
    const box = $("plot");
    box.dataset.points = String(series.length);
    if (series.length === 0) {
      box.replaceChildren(el("p", { className: "muted", text: "No ticks yet." }));
      return;
    }
    box.replaceChildren(
      chart("Retrieval latency (ms)", series, [
        { key: "p95RetrievalMs", name: "p95", cls: "line-p95" },
        { key: "p50RetrievalMs", name: "p50", cls: "line-p50" }], 2, true),
      chart("Records", series, [{ key: "records", name: "records", cls: "line-records" }], 0, false));
  }

  /** A small hand-drawn line chart: x = the tick's logical `now`, y from 0 to the max.
   * With `robust`, a few outliers (e.g. a first, cold retrieval) do not flatten the rest:
   * the axis stops a little above the 98th percentile and higher points are drawn on the
   * top edge, the caption giving the true maximum. */
  function chart(title, series, lines, digits, robust) {
    const W = 300, H = 120, L = 40, R = 8, T = 10, B = 20;
    const xs = series.map((p) => Number(p.now) || 0);
    const x0 = Math.min(...xs), x1 = Math.max(...xs);
    const values = [];
    for (const line of lines) for (const p of series) values.push(Number(p[line.key]) || 0);
    const trueMax = Math.max(0, ...values);
    let yMax = trueMax;
    if (robust && values.length >= 20) {
      const sorted = values.slice().sort((a, b) => a - b);
      const p98 = sorted[Math.floor(0.98 * (sorted.length - 1))];
      if (p98 > 0 && trueMax > 2 * p98) yMax = p98 * 1.25;
    }
    if (yMax <= 0) yMax = 1;
    const clipped = trueMax > yMax;
    const sx = (x) => L + (x1 > x0 ? ((x - x0) / (x1 - x0)) * (W - L - R) : (W - L - R) / 2);
    const sy = (y) => T + (1 - Math.min(y, yMax) / yMax) * (H - T - B);
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "chart", role: "img",
      "aria-label": `${title} over ticks` });
    root.append(svg("title", {}, `${title} over ticks`));
    for (const frac of [0, 0.5, 1]) {
      const y = sy(yMax * frac);
      root.append(svg("line", { x1: L, x2: W - R, y1: y, y2: y, class: "grid" }));
      root.append(svg("text", { x: L - 4, y: y + 3, class: "axis", "text-anchor": "end" },
        fmt(yMax * frac, frac === 0 ? 0 : digits)));
    }
    root.append(svg("text", { x: L, y: H - 5, class: "axis" }, fmtInt(x0)));
    root.append(svg("text", { x: W - R, y: H - 5, class: "axis", "text-anchor": "end" }, fmtInt(x1)));
    for (const line of lines) {
      const pts = series.map((p) => `${sx(Number(p.now) || 0).toFixed(1)},${sy(Number(p[line.key]) || 0).toFixed(1)}`);
      root.append(svg("polyline", { points: pts.join(" "), class: `line ${line.cls}`,
        "data-testid": `plot-${line.name}`, "data-points": pts.length }));
      const last = series[series.length - 1];
      root.append(svg("circle", { cx: sx(Number(last.now) || 0), cy: sy(Number(last[line.key]) || 0), r: 2.5,
        class: `dot ${line.cls}` }));
    }
    const legend = el("p", { className: "chart-legend" }, el("strong", { text: title }),
      ...lines.map((line) => {
        const last = series[series.length - 1][line.key];
        return el("span", { className: `key ${line.cls}`, text: ` ${line.name} ${fmt(last, digits)}` });
      }),
      clipped ? el("span", { className: "muted", dataset: { testid: "plot-clipped" },
        text: ` (axis cut; max ${fmt(trueMax, digits)})` }) : null);
    return el("figure", { className: "chart-box" }, root, el("figcaption", null, legend));
  }

  // --- refresh ----------------------------------------------------------------------------

  async function guarded(fn) {
    try {
      await fn();
      showError($("error"), null);
    } catch (err) {
      showError($("error"), err);
    }
  }

  /** Reload everything; a call while a refresh runs makes it run once more when done. */
  async function refresh() {
    if (state.refreshing) {
      state.refreshAgain = true;
      return state.refreshing;
    }
    document.body.classList.add("busy");
    state.refreshing = (async () => {
      do {
        state.refreshAgain = false;
        await guarded(refreshOnce);
      } while (state.refreshAgain);
    })();
    try {
      await state.refreshing;
    } finally {
      state.refreshing = null;
      document.body.classList.remove("busy");
      document.body.dataset.refreshed = String((Number(document.body.dataset.refreshed) || 0) + 1);
    }
  }

  async function refreshOnce() {
    await Promise.all([loadAgents(), loadMetrics(), loadRedaction()]);
    if (state.agentId && !currentAgent()) {  // the agent was forgotten
      state.agentId = null;
      clearDiff();
      clearExplain();
      state.records = [];
      renderRecords([]);
      $("explain-submit").disabled = true;
      return;
    }
    if (state.agentId) {
      renderLayerFilter();
      await loadDiff();
      await loadRecords();
    }
  }

  function setAuto(on) {
    if (state.timer) { clearInterval(state.timer); state.timer = null; }
    if (on) {
      state.timer = setInterval(() => {
        if (!document.hidden && !state.refreshing) refresh();
      }, AUTO_REFRESH_MS);
    }
  }

  function init() {
    $("refresh").addEventListener("click", () => refresh());
    $("auto-refresh").addEventListener("change", (e) => setAuto(e.target.checked));
    $("page-prev").addEventListener("click", () => page(-1));
    $("page-next").addEventListener("click", () => page(1));
    $("page-size").addEventListener("change", (e) => {
      state.limit = Number.parseInt(e.target.value, 10) || 100;
      state.offset = 0;
      guarded(() => loadRecords());
    });
    $("layer-filter").addEventListener("change", (e) => {
      state.layer = e.target.value;
      state.offset = 0;
      guarded(() => loadRecords());
    });
    $("search-form").addEventListener("submit", search);
    $("explain-form").addEventListener("submit", explain);
    $("candidates-more").addEventListener("click", moreCandidates);
    $("redaction-toggle").addEventListener("click", () => toggleRedaction());
    $("token-form").addEventListener("submit", submitToken);
    $("token-cancel").addEventListener("click", () => {
      $("token-input").value = "";
      showError($("redaction-error"), null);
      show($("token-form"), false);
    });
    state.limit = Number.parseInt($("page-size").value, 10) || 100;
    refresh().then(() => { document.body.dataset.ready = "true"; });
  }

  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", init);
  else init();
})();
