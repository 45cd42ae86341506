// predex operator console: the page served by the internal server (docs/operating/running.md,
// "Dashboard"). Plain script, no build step and nothing fetched from elsewhere: the
// overview and the metrics are polled from this server, and the book and trades of the
// chosen market come live from its market feed (/ws/market).
"use strict";

const POLL_MS = 2000;
const SAMPLES = 90; // three minutes of metric samples at POLL_MS
const MODE_NAMES = { "normal": "normal trading", "cancel-only": "cancel-only", "trading-disabled": "trading disabled" };

const $ = (id) => document.getElementById(id);
const state = {
  overview: null,
  market: null, // the condition id whose book is shown
  book: { bids: new Map(), asks: new Map() },
  trades: [],
  socket: null,
  samples: [],
  limitsFilled: false,
};

// The internal server's token (`predex admin dashboard-url` prints a link carrying it in
// the fragment, which no browser sends): kept for this tab only, and taken out of the
// address bar and history at once. Without one the page asks for it.
function token() {
  const m = location.hash.match(/token=([^&]+)/);
  if (m) {
    sessionStorage.setItem("predex-token", decodeURIComponent(m[1]));
    history.replaceState(null, "", location.pathname + location.search);
  }
  let t = sessionStorage.getItem("predex-token");
  if (!t) {
    t = (window.prompt("predex internal token (predex admin dashboard-url prints a link with it)") || "").trim();
    if (t) sessionStorage.setItem("predex-token", t);
  }
  return t || "";
}

async function api(path, body) {
  const headers = { "authorization": `Bearer ${token()}` };
  const init = body === undefined ? { headers } : {
    method: "POST",
    headers: { ...headers, "content-type": "application/json" },
    body: JSON.stringify(body),
  };
  const r = await fetch(path, init);
  // A wrong or stale token: ask again on the next call.
  if (r.status === 401) sessionStorage.removeItem("predex-token");
  const text = await r.text();
  let json = null;
  try { json = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!r.ok) throw new Error((json && json.error) || `${r.status} ${r.statusText}`);
  return json === null ? text : json;
}

function setText(id, text) {
  const el = $(id);
  if (el.textContent !== String(text)) el.textContent = text;
}

function cell(row, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  row.appendChild(td);
  return td;
}

// A decimal price at its shortest, as the overview gives it ("0.5500" → "0.55").
const short = (p) => (p.includes(".") ? p.replace(/0+$/, "").replace(/\.$/, "") : p);

const dash = (v) => (v === null || v === undefined || v === "" ? "–" : v);

function age(secs) {
  if (secs === null || secs === undefined) return "–";
  if (secs < 90) return `${secs} s`;
  if (secs < 5400) return `${Math.round(secs / 60)} min`;
  return `${(secs / 3600).toFixed(1)} h`;
}

function clock(ms) {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

// --- overview ------------------------------------------------------------------------

async function refreshOverview() {
  const o = await api("/internal/overview");
  state.overview = o;
  showMode(o.mode);
  showMarkets(o.markets);
  showSettlement(o.settlement);
  showEvents(o.events);
  showLimits(o.rateLimit);
}

function showMode(mode) {
  const el = $("mode");
  el.dataset.mode = mode;
  setText("mode", MODE_NAMES[mode] || mode);
  for (const b of document.querySelectorAll("[data-set-mode]")) {
    b.setAttribute("aria-pressed", String(b.dataset.setMode === mode));
  }
}

function showMarkets(markets) {
  const body = $("markets-table").tBodies[0];
  const rows = [];
  for (const m of markets) {
    const tr = document.createElement("tr");
    tr.dataset.conditionId = m.condition_id;
    if (m.condition_id === state.market) tr.className = "selected";
    const q = document.createElement("td");
    q.className = "question";
    const b = document.createElement("button");
    b.type = "button";
    b.className = "link";
    b.textContent = m.question;
    b.setAttribute("aria-label", `Show the book of ${m.question}`);
    b.addEventListener("click", () => selectMarket(m.condition_id));
    q.appendChild(b);
    tr.appendChild(q);
    cell(tr, dash(m.best_bid), "num");
    cell(tr, dash(m.best_ask), "num");
    cell(tr, dash(m.last), "num");
    cell(tr, m.volume_24h, "num");
    cell(tr, String(m.open_orders), "num");
    cell(tr, m.closed ? "closed" : m.accepting_orders ? "trading" : "not accepting");
    rows.push(tr);
  }
  // Replaced only when something changed, so keyboard focus stays where it is.
  const before = Array.from(body.rows, (r) => r.textContent + r.className).join("\n");
  const after = rows.map((r) => r.textContent + r.className).join("\n");
  if (before !== after) {
    const focused = document.activeElement && body.contains(document.activeElement)
      ? document.activeElement.closest("tr").dataset.conditionId : null;
    body.replaceChildren(...rows);
    if (focused) {
      const again = body.querySelector(`tr[data-condition-id="${CSS.escape(focused)}"] button`);
      if (again) again.focus();
    }
  }
  const select = $("book-market");
  const ids = markets.map((m) => m.condition_id);
  if (Array.from(select.options, (o) => o.value).join() !== ids.join()) {
    select.replaceChildren(...markets.map((m) => new Option(m.question, m.condition_id)));
  }
  if (!state.market && markets.length) selectMarket(markets[0].condition_id);
  else if (state.market) select.value = state.market;
}

function showSettlement(s) {
  setText("settles", s.settles === "chain" ? "on chain" : "in the ledger");
  setText("pending", String(s.pending));
  setText("pending-age", s.pending ? age(s.oldestPendingSecs) : "–");
  const chain = $("chain");
  chain.hidden = !s.chain;
  if (s.chain) {
    setText("operator", s.chain.operator);
    const gas = (b) => (b === null ? "unknown (node not answering)" : `${b} (native token)`);
    setText("gas", gas(s.chain.gasBalance) + (s.chain.outOfGas ? " — too little: settlement waits until it is funded" : ""));
    setText("relayer", s.chain.relayer === s.chain.operator ? "the operator" : s.chain.relayer);
    setText("relayer-gas", gas(s.chain.relayerGasBalance));
    setText("in-flight", String(s.chain.inFlight));
    const r = s.chain.payoutReports;
    setText("payout-reports", `${r.pending} pending, ${r.confirmed} confirmed, ${r.failed} failed`);
    const t = s.chain.lastTx;
    setText("last-tx", t ? `${t.status} ${clock(t.at * 1000)} ${t.hash}` : "none since start");
  }
}

function showEvents(e) {
  if (!e) {
    setText("events-to", "off (no --events-to)");
    setText("events-acked", "–");
    setText("events-lag", "–");
    return;
  }
  setText("events-to", `${e.to}${e.connected ? "" : " (not connected)"}`);
  setText("events-acked", `${e.acked} of ${e.last}`);
  setText("events-lag", String(e.lag));
}

function showLimits(l) {
  setText("limit-now", l.maxRequests === 0 ? "off" : `${l.maxRequests} requests per ${l.windowSecs} s`);
  if (!state.limitsFilled) {
    $("limit-max").value = l.maxRequests;
    $("limit-window").value = l.windowSecs;
    state.limitsFilled = true;
  }
}

// --- the chosen market's book and trades ----------------------------------------------

function yesToken(conditionId) {
  const m = state.overview && state.overview.markets.find((x) => x.condition_id === conditionId);
  return m ? m.asset_id : null;
}

async function selectMarket(conditionId) {
  if (state.market === conditionId) return;
  state.market = conditionId;
  $("book-market").value = conditionId;
  for (const tr of $("markets-table").tBodies[0].rows) {
    tr.className = tr.dataset.conditionId === conditionId ? "selected" : "";
  }
  state.book = { bids: new Map(), asks: new Map() };
  state.trades = [];
  drawDepth();
  showTrades();
  connectFeed();
  try {
    const past = await api(`/internal/trades?market=${encodeURIComponent(conditionId)}`);
    if (state.market !== conditionId) return;
    // Feed trades that arrived meanwhile stay on top.
    state.trades = state.trades.concat(past.map((t) => ({ ...t, time: t.time * 1000 })));
    showTrades();
  } catch (e) {
    problem(e);
  }
}

function connectFeed() {
  if (state.socket) {
    state.socket.onclose = null;
    state.socket.close();
    state.socket = null;
  }
  const asset = yesToken(state.market);
  if (!asset) return;
  const ws = new WebSocket(`ws://${location.host}/ws/market?token=${encodeURIComponent(token())}`);
  state.socket = ws;
  ws.onopen = () => ws.send(JSON.stringify({ assets_ids: [asset], type: "market" }));
  ws.onmessage = (ev) => {
    if (ev.data === "PONG") return;
    let msgs;
    try { msgs = JSON.parse(ev.data); } catch (_) { return; }
    for (const m of Array.isArray(msgs) ? msgs : [msgs]) onFeed(m, asset);
  };
  ws.onclose = () => {
    if (state.socket === ws) setTimeout(() => { if (state.socket === ws) connectFeed(); }, 2000);
  };
  ws.onerror = () => {};
}

function onFeed(m, asset) {
  if (m.asset_id && m.asset_id !== asset && m.event_type !== "price_change") return;
  switch (m.event_type) {
    case "book": {
      const level = (l) => [l.price, Number(l.size)];
      state.book = { bids: new Map(m.bids.map(level)), asks: new Map(m.asks.map(level)) };
      drawDepth();
      break;
    }
    case "price_change":
      for (const c of m.price_changes || []) {
        if (c.asset_id !== asset) continue;
        const side = c.side === "BUY" ? state.book.bids : state.book.asks;
        if (Number(c.size) === 0) side.delete(c.price); else side.set(c.price, Number(c.size));
      }
      drawDepth();
      break;
    case "last_trade_price":
      state.trades.unshift({ time: Number(m.timestamp), side: m.side, price: short(m.price), size: m.size });
      state.trades.length = Math.min(state.trades.length, 50);
      showTrades();
      break;
    default:
  }
}

function showTrades() {
  const rows = state.trades.map((t) => {
    const tr = document.createElement("tr");
    cell(tr, clock(t.time));
    cell(tr, t.side, t.side);
    cell(tr, t.price, "num");
    cell(tr, t.size, "num");
    return tr;
  });
  $("trades-table").tBodies[0].replaceChildren(...rows);
}

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const el = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) el.setAttribute(k, v);
  if (text !== undefined) el.textContent = text;
  return el;
}

function drawDepth() {
  const svg = $("depth");
  const title = svg.querySelector("title");
  const [W, H, PAD] = [600, 240, 24];
  const bids = [...state.book.bids].map(([p, s]) => [Number(p), s]).sort((a, b) => b[0] - a[0]);
  const asks = [...state.book.asks].map(([p, s]) => [Number(p), s]).sort((a, b) => a[0] - b[0]);
  const parts = [title];
  if (!bids.length && !asks.length) {
    title.textContent = "Depth chart: the book is empty";
    parts.push(svgEl("text", { x: W / 2, y: H / 2, "text-anchor": "middle", class: "axis" }, "no resting orders"));
    svg.replaceChildren(...parts);
    return;
  }
  const cum = (levels) => { let t = 0; return levels.map(([p, s]) => [p, (t += s)]); };
  const [cb, ca] = [cum(bids), cum(asks)];
  const prices = bids.concat(asks).map((l) => l[0]);
  let [lo, hi] = [Math.min(...prices), Math.max(...prices)];
  if (hi - lo < 0.02) { lo -= 0.01; hi += 0.01; }
  const top = Math.max(cb.length ? cb[cb.length - 1][1] : 0, ca.length ? ca[ca.length - 1][1] : 0);
  const x = (p) => PAD + ((p - lo) / (hi - lo)) * (W - 2 * PAD);
  const y = (s) => H - PAD - (s / top) * (H - 2 * PAD);
  const area = (levels, toward) => {
    if (!levels.length) return "";
    let d = `M${x(levels[0][0])},${y(0)}`;
    let prev = 0;
    for (const [p, s] of levels) { d += ` L${x(p)},${y(prev)} L${x(p)},${y(s)}`; prev = s; }
    return `${d} L${x(toward)},${y(prev)} L${x(toward)},${y(0)} Z`;
  };
  if (cb.length) parts.push(svgEl("path", { d: area(cb, lo), class: "bids" }));
  if (ca.length) parts.push(svgEl("path", { d: area(ca, hi), class: "asks" }));
  parts.push(svgEl("text", { x: PAD, y: H - 6, class: "axis" }, lo.toFixed(3)));
  parts.push(svgEl("text", { x: W - PAD, y: H - 6, "text-anchor": "end", class: "axis" }, hi.toFixed(3)));
  parts.push(svgEl("text", { x: PAD, y: 14, class: "axis" }, `${top.toLocaleString()} shares`));
  title.textContent = `Depth chart: ${bids.length} bid levels up to ${bids.length ? bids[0][0] : "–"}, `
    + `${asks.length} ask levels from ${asks.length ? asks[0][0] : "–"}`;
  svg.replaceChildren(...parts);
}

// --- metrics ---------------------------------------------------------------------------

// Sums of the Prometheus text's samples by metric name, optionally by one label's value.
function parseMetrics(text) {
  const sums = new Map();
  for (const line of text.split("\n")) {
    if (!line || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][\w:]*)(\{[^}]*\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const v = Number(m[3]);
    if (!Number.isFinite(v)) continue;
    sums.set(m[1], (sums.get(m[1]) || 0) + v);
    const result = m[2] && /result="([^"]*)"/.exec(m[2]);
    if (result) sums.set(`${m[1]}:${result[1]}`, (sums.get(`${m[1]}:${result[1]}`) || 0) + v);
  }
  return sums;
}

async function refreshMetrics() {
  const sums = parseMetrics(await api("/metrics"));
  const g = (k) => sums.get(k) || 0;
  state.samples.push({
    t: performance.now() / 1000,
    requests: g("predex_http_requests_total"),
    groups: g("predex_persister_batch_jobs_count"),
    jobs: g("predex_persister_batch_jobs_sum"),
    matches: g("predex_matches_total"),
    confirmed: g("predex_settlements_total:confirmed"),
    failed: g("predex_settlements_total:failed"),
  });
  if (state.samples.length > SAMPLES) state.samples.shift();
  const s = state.samples;
  const rates = (f) => s.slice(1).map((b, i) => f(b, s[i]));
  const per = (k) => (b, a) => Math.max(0, b[k] - a[k]) / (b.t - a.t);
  const jobs = (b, a) => (b.groups > a.groups ? (b.jobs - a.jobs) / (b.groups - a.groups) : 0);
  chart("requests", rates(per("requests")));
  chart("groups", rates(per("groups")));
  chart("jobs", rates(jobs));
  chart("matches", rates(per("matches")));
  // Settled per minute over the last minute of samples.
  const last = s[s.length - 1];
  const first = s.find((x) => last.t - x.t <= 60) || last;
  const minutes = (last.t - first.t) / 60;
  const perMin = (k) => (minutes > 0 ? ((last[k] - first[k]) / minutes).toFixed(1) : "–");
  setText("confirmed-rate", perMin("confirmed"));
  setText("failed-rate", perMin("failed"));
}

function chart(name, values) {
  const svg = $(`chart-${name}`);
  const title = svg.querySelector("title");
  const [W, H] = [300, 80];
  const now = values.length ? values[values.length - 1] : null;
  setText(`now-${name}`, now === null ? "–" : now.toFixed(now < 10 ? 1 : 0));
  const parts = [title];
  if (values.length > 1) {
    const top = Math.max(1, ...values);
    const pts = values.map((v, i) => `${(i / (SAMPLES - 2)) * W},${H - 4 - (v / top) * (H - 16)}`);
    parts.push(svgEl("polyline", { points: pts.join(" "), class: "series" }));
    parts.push(svgEl("text", { x: 4, y: 12, class: "axis" }, `max ${top.toFixed(top < 10 ? 1 : 0)}`));
  }
  svg.replaceChildren(...parts);
}

// --- controls ----------------------------------------------------------------------------

function askMode(mode) {
  const current = state.overview ? state.overview.mode : "?";
  if (mode === current) return;
  const dialog = $("confirm");
  setText("confirm-text", `Switch the platform from ${MODE_NAMES[current] || current} to ${MODE_NAMES[mode]}? `
    + (mode === "normal" ? "Orders will be accepted again." : "New orders will be refused with 503."));
  dialog.dataset.mode = mode;
  dialog.returnValue = "";
  dialog.showModal();
}

async function onConfirmClosed() {
  const dialog = $("confirm");
  if (dialog.returnValue !== "ok") return;
  try {
    const r = await api("/internal/mode", { mode: dialog.dataset.mode });
    showMode(r.mode);
    if (state.overview) state.overview.mode = r.mode;
  } catch (e) {
    problem(e);
  }
}

async function onLimits(ev) {
  ev.preventDefault();
  const body = { maxRequests: Number($("limit-max").value), windowSecs: Number($("limit-window").value) };
  const out = $("limit-result");
  try {
    const r = await api("/internal/rate-limit", body);
    out.className = "";
    out.textContent = `Applied: ${r.maxRequests === 0 ? "off" : `${r.maxRequests} per ${r.windowSecs} s`} (until restart)`;
    showLimits(r);
  } catch (e) {
    out.className = "error";
    out.textContent = `Refused: ${e.message}`;
  }
}

function problem(e) {
  const el = $("connection");
  el.className = "error";
  el.textContent = `predex not answering: ${e.message}`;
}

async function tick() {
  try {
    await Promise.all([refreshOverview(), refreshMetrics()]);
    const el = $("connection");
    el.className = "";
    el.textContent = `updated ${clock(Date.now())}`;
  } catch (e) {
    problem(e);
  }
}

document.addEventListener("DOMContentLoaded", () => {
  for (const b of document.querySelectorAll("[data-set-mode]")) {
    b.addEventListener("click", () => askMode(b.dataset.setMode));
  }
  $("confirm").addEventListener("close", onConfirmClosed);
  $("limit-form").addEventListener("submit", onLimits);
  $("book-market").addEventListener("change", (ev) => selectMarket(ev.target.value));
  setInterval(() => {
    if (state.socket && state.socket.readyState === WebSocket.OPEN) state.socket.send("PING");
  }, 10000);
  tick();
  setInterval(tick, POLL_MS);
});
