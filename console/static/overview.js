// The overview: what ran over a time window, as charts. Executions by state, starts per bucket
// (a minute over the last hour) and the p50/p99 durations of the executions that ended, filtered by
// provider, state, conversation and window. The filters live in the address (#/overview?…), so a
// view can be shared or reloaded.
//
// Computed here from the listing extension (GET /v1/executions, or a conversation's executions),
// not by a server-side aggregate. Why: the listing is newest first by creation time and already
// tenant-scoped, so reading back to the window's start stops there (an hour of a busy runtime is a
// few pages of 200), the state and conversation filters are the listing's own, and no new endpoint
// has to be written twice (bbolt and PostgreSQL) or be missing from other servers. The cost is
// bounded: at most MAX_PAGES pages per refresh; a window with more executions is said to be cut to
// the newest ones. For long-term trends, use the module's Prometheus metrics (README, Metrics).
//
// Live from one stream (live.js): the window is read once, then the tenant's lifecycle events
// (GET /v1/events?lifecycle=true, with the conversation filter when one is set), opened at the
// cursor of now taken before that read, keep it current: a start adds an execution, an end gives
// it its duration, without reading the listing again. The charts are redrawn from what the page
// holds every REDRAW_MS, so the window slides with the clock. A filter change reads the window
// again; a stream that cannot be opened falls back to reading it every FALLBACK_MS, said in the
// status line.
//
// Usage (docs/usage.md): the tokens and cost of the executions in the window, from the usage on
// their snapshots (the same rows, so the same filters apply), tokens per provider over time, and
// the window's most expensive conversations, which GET /v1/usage?groupBy=conversation sums on
// the server (exact, and over every execution of the window, not only the pages read here); a
// server without that extension leaves the list out. The usage of an execution is read from its
// snapshot when its end arrives (usage reports are not lifecycle events), and the top list is
// asked again at most every REDRAW_MS while the window changes.
//
// Charts are drawn by uPlot (vendor/uplot, see its README.txt), imported only when this view
// opens. Each chart has its numbers as a table beside it: a canvas says nothing to a screen reader.

import { get, ApiError, STATES, TERMINAL, enc } from './api.js';
import { h, replace, errorText } from './dom.js';
import { duration } from './timeline.js';
import { FALLBACK_MS, LIFECYCLE_TYPES, applyEvent, cursorOfNow, follow } from './live.js';

const REDRAW_MS = 5000;
const PAGE_SIZE = 200;
const MAX_PAGES = 10;
const BUCKETS = 60;
const WINDOWS = [[15, 'Last 15 minutes'], [60, 'Last hour'], [360, 'Last 6 hours'], [1440, 'Last 24 hours']];
// starting is in the protocol's enum but never observed here (docs/protocol.md §4.1).
const SHOWN_STATES = STATES.filter((s) => s !== 'starting');
const COLORS = { accent: '#0a58ca', p50: '#146c2e', p99: '#b42318' };
// One color per provider in the usage chart, in the order providers first appear.
const SERIES_COLORS = ['#0a58ca', '#b54708', '#146c2e', '#6941c6', '#b42318', '#0e7490'];
const TOP_CONVERSATIONS = 5;

// usageOf is an execution's total tokens and cost (micro-units by currency), zero when none.
export function usageOf(x) {
  const u = x.usage || {};
  const cost = {};
  if (u.cost) cost[u.cost.currency] = micros(u.cost.amount);
  return { tokens: u.totalTokens || 0, cost };
}

// micros reads a decimal amount ("0.0125") as integer micro-units: sums stay exact.
export function micros(amount) {
  const [whole, frac = ''] = String(amount).split('.');
  return Number(whole) * 1e6 + Number((frac + '000000').slice(0, 6));
}

// money writes micro-units by currency as "0.0125 USD, 2 EUR" ("–" for none).
export function money(byCurrency) {
  const parts = Object.keys(byCurrency).sort().filter((c) => byCurrency[c]).map((c) => {
    const m = byCurrency[c];
    const frac = String(m % 1e6).padStart(6, '0').replace(/0+$/, '');
    return `${Math.floor(m / 1e6)}${frac ? `.${frac}` : ''} ${c}`;
  });
  return parts.length ? parts.join(', ') : '–';
}

// percentile is the nearest-rank percentile of ascending values: the smallest value with at least
// p% of the values at or below it. undefined for no values.
export function percentile(sorted, p) {
  if (!sorted.length) return undefined;
  return sorted[Math.max(0, Math.ceil((p / 100) * sorted.length) - 1)];
}

export function renderOverview(main, params) {
  const provider = h('select', { id: 'ov-provider', name: 'provider' }, h('option', { value: '' }, 'All providers'));
  const state = h('select', { id: 'ov-state', name: 'state' }, h('option', { value: '' }, 'All states'),
    SHOWN_STATES.map((s) => h('option', { value: s }, s.replace('_', ' '))));
  const conversation = h('input', { id: 'ov-conversation', name: 'conversation', autocomplete: 'off', spellcheck: 'false', placeholder: 'any conversation' });
  const windowSel = h('select', { id: 'ov-window', name: 'window' }, WINDOWS.map(([m, label]) => h('option', { value: String(m) }, label)));
  const filters = h('form', { id: 'ov-filters', class: 'filters', onsubmit: (e) => { e.preventDefault(); changed(); } },
    h('label', {}, 'Provider ', provider), h('label', {}, 'State ', state),
    h('label', {}, 'Conversation ', conversation), h('label', {}, 'Time ', windowSel),
    h('button', { type: 'submit' }, 'Apply'));
  state.value = SHOWN_STATES.includes(params.get('state')) ? params.get('state') : '';
  conversation.value = params.get('conversation') || '';
  windowSel.value = WINDOWS.some(([m]) => String(m) === params.get('window')) ? params.get('window') : '60';
  const wantedProvider = params.get('provider') || '';

  const status = h('p', { class: 'status', id: 'ov-status', role: 'status' }, 'Loading…');
  const notice = h('div', { id: 'ov-notice', 'aria-live': 'polite' });
  const figures = {
    total: h('strong', { id: 'ov-total' }, '–'),
    ended: h('strong', { id: 'ov-ended' }, '–'),
    p50: h('strong', { id: 'ov-p50' }, '–'),
    p99: h('strong', { id: 'ov-p99' }, '–'),
    tokens: h('strong', { id: 'ov-tokens' }, '–'),
    cost: h('strong', { id: 'ov-cost' }, '–'),
  };
  const headline = h('dl', { class: 'figures', id: 'ov-figures' },
    h('div', {}, h('dt', {}, 'Started'), h('dd', {}, figures.total)),
    h('div', {}, h('dt', {}, 'Ended'), h('dd', {}, figures.ended)),
    h('div', {}, h('dt', {}, 'p50 duration'), h('dd', {}, figures.p50)),
    h('div', {}, h('dt', {}, 'p99 duration'), h('dd', {}, figures.p99)),
    h('div', {}, h('dt', {}, 'Tokens'), h('dd', {}, figures.tokens)),
    h('div', {}, h('dt', {}, 'Cost'), h('dd', {}, figures.cost)));
  const charts = {
    states: chartFigure('chart-states', 'Executions by state'),
    starts: chartFigure('chart-starts', 'Starts'),
    durations: chartFigure('chart-durations', 'Duration (queued to ended), p50 and p99'),
    usage: chartFigure('chart-usage', 'Tokens per provider'),
  };
  // Under the figures, when the window has no usage: how usage arrives, so 0 tokens and an empty
  // chart on a first run do not read as broken.
  const usageEmpty = h('p', { class: 'hint', id: 'ov-usage-empty', hidden: true },
    'No usage reported in this window. Usage is what the agents report of each execution (tokens, cost; see docs/usage.md): ',
    'an ACP agent reports it per turn, an A2A agent in its task metadata, and the mock only when the execution\'s config has ',
    h('code', {}, 'usage'), ', e.g. ', h('code', {}, '{"usage": {"inputTokens": 10, "outputTokens": 5}}'), '.');
  const top = h('table', { id: 'ov-top', class: 'chart-data' });
  const topSection = h('section', { id: 'ov-top-section', hidden: true },
    h('h3', {}, 'Top conversations by cost'), top);
  const body = h('div', { id: 'ov-body' }, headline, usageEmpty,
    h('div', { class: 'charts' }, charts.states.figure, charts.starts.figure, charts.durations.figure, charts.usage.figure),
    topSection,
    h('p', { class: 'hint' }, 'Durations are from creation to the end (time in the queue and waiting for answers included), '
      + 'of the executions created in the window that have ended. Percentiles are nearest-rank.'));
  main.append(h('h2', {}, 'Overview'), filters, notice, status, body);

  let timer = null;
  let ticker = null;
  let stopped = false;
  let shown = null;
  let uPlot = null;
  const plots = [];
  let tracked = new Map(); // execution id → the execution, from the window's read and the events since
  let truncated = false;
  let stream = null;
  let live = false;
  let reading = null; // events that arrive while the window is read, applied after it
  const fetching = new Map(); // execution id → its events, while its snapshot is read

  function changed() {
    const q = new URLSearchParams();
    for (const [k, el] of [['provider', provider], ['state', state], ['conversation', conversation]]) {
      if (el.value.trim()) q.set(k, el.value.trim());
    }
    if (windowSel.value !== '60') q.set('window', windowSel.value);
    // replaceState, not location.hash: the address records the filters without re-routing.
    history.replaceState(null, '', `#/overview${q.size ? `?${q}` : ''}`);
    shown = null;
    resync();
  }
  for (const el of [provider, state, windowSel]) el.addEventListener('change', changed);
  conversation.addEventListener('change', changed);

  async function fetchWindow(since) {
    const conv = conversation.value.trim();
    const path = conv ? `/conversations/${enc(conv)}/executions` : '/executions';
    const found = [];
    let after = '';
    for (let page = 0; page < MAX_PAGES; page++) {
      const q = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (state.value) q.set('state', state.value);
      if (after) q.set('after', after);
      const list = await get(`${path}?${q}`);
      for (const x of list.executions) {
        if (Date.parse(x.createdAt) < since) return { found, truncated: false };
        found.push(x);
      }
      if (!list.nextCursor) return { found, truncated: false };
      after = list.nextCursor;
    }
    return { found, truncated: true };
  }

  // A filter change starts a new read while one may be in flight: only the newest one draws
  // and follows, or two streams would run.
  let generation = 0;

  // render draws the window from what the page holds; only when that changed.
  function render(topDue = false) {
    const minutes = Number(windowSel.value);
    const now = Date.now();
    const since = now - minutes * 60000;
    const rows = [...tracked.values()].filter((x) => Date.parse(x.createdAt) >= since
      && (!provider.value || x.providerId === provider.value) && (!state.value || x.state === state.value))
      .sort((a, b) => (a.createdAt < b.createdAt ? 1 : -1));
    // The window's start moves with the clock: its bucket edges are in the signature.
    const signature = JSON.stringify([minutes, truncated, Math.floor(since / ((minutes * 60000) / BUCKETS)), rows.map((x) => [x.id, x.state, x.updatedAt])]);
    if (signature !== shown) {
      shown = signature;
      draw(rows, since, now, minutes);
      refreshTop(since, now);
    } else if (topDue) {
      refreshTop(since, now);
    }
    replace(notice, truncated ? h('p', { class: 'notice', id: 'ov-truncated' },
      `More than ${MAX_PAGES * PAGE_SIZE} executions in this window: only the newest ${tracked.size} are counted. Narrow the filters or the window.`) : null);
    status.dataset.live = String(live);
    status.textContent = `${WINDOWS.find(([m]) => m === minutes)[1]} · `
      + (live ? 'live: changes appear as they happen'
        : `updated ${new Date().toLocaleTimeString()} · no live stream from this server, so re-read every ${FALLBACK_MS / 1000} s`);
    // What ended before the window began can change no more: let it go.
    for (const [id, x] of tracked) if (TERMINAL.has(x.state) && Date.parse(x.createdAt) < since) tracked.delete(id);
  }

  function onEvent(ev, mine) {
    if (mine !== generation) return;
    if (reading) { reading.push(ev); return; }
    const waiting = fetching.get(ev.executionId);
    if (waiting) { waiting.push(ev); return; }
    const x = tracked.get(ev.executionId);
    if (x) {
      const y = applyEvent(x, ev);
      tracked.set(x.id, y);
      // Its usage is on its snapshot (usage reports are not lifecycle events): read it once, at
      // the end, when it is final.
      if (y !== x && TERMINAL.has(y.state)) { readSnapshot(y, mine); return; }
    } else if (ev.type === 'run.queued') {
      // A new execution: what the charts need is in its first event.
      tracked.set(ev.executionId, { id: ev.executionId, providerId: ev.data?.providerId, state: 'queued', createdAt: ev.time, updatedAt: ev.time });
    } else {
      // One the window's read did not hold (another state under a state filter, or older): its
      // snapshot, once.
      readSnapshot({ id: ev.executionId }, mine, ev);
      return;
    }
    scheduleRender();
  }

  // readSnapshot reads one execution's snapshot and applies to it the events that arrive
  // meanwhile (and first, when given, the event that asked for it).
  function readSnapshot(x, mine, first) {
    fetching.set(x.id, first ? [first] : []);
    get(`/executions/${enc(x.id)}`).then((snap) => {
      const events = fetching.get(x.id) || [];
      fetching.delete(x.id);
      if (stopped || mine !== generation) return;
      for (const e of events) snap = applyEvent(snap, e);
      tracked.set(snap.id, snap);
      scheduleRender();
    }, () => { fetching.delete(x.id); scheduleRender(); });
  }

  // A burst of events is drawn once.
  let renderPending = false;
  function scheduleRender() {
    if (renderPending) return;
    renderPending = true;
    setTimeout(() => { renderPending = false; if (!stopped) render(); }, 100);
  }

  // read reads the window from the listing; false when it could not.
  async function read(mine) {
    reading = reading || [];
    try {
      if (!uPlot) uPlot = (await import('./vendor/uplot/uPlot.esm.js')).default;
      const minutes = Number(windowSel.value);
      const { found, truncated: cut } = await fetchWindow(Date.now() - minutes * 60000);
      if (stopped || mine !== generation) return false;
      tracked = new Map(found.map((x) => [x.id, x]));
      truncated = cut;
      const buffered = reading;
      reading = null;
      for (const ev of buffered) onEvent(ev, mine);
      render();
      return true;
    } catch (err) {
      reading = null;
      if (stopped || mine !== generation) return false;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405) && !/Conversation/.test(err.message)) {
        body.hidden = true;
        status.textContent = '';
        replace(notice, h('p', { class: 'notice', id: 'listing-notice' },
          'This server does not list executions (the listing extension, GET /v1/executions, is not in this build), so there is nothing to chart.'));
        return null; // nothing to follow
      }
      status.textContent = `Could not load the overview: ${errorText(err)} · retrying`;
      return false;
    }
  }

  // resync reads the window and follows the stream from before that read: at the start, after a
  // filter change, and in the fallback.
  async function resync() {
    clearTimeout(timer);
    clearInterval(ticker);
    const mine = ++generation;
    if (stream) { stream.close(); stream = null; }
    live = false;
    const filters = new URLSearchParams({ lifecycle: 'true' });
    if (conversation.value.trim()) filters.set('conversation', conversation.value.trim());
    let cursor = null;
    try {
      cursor = await cursorOfNow(filters);
    } catch {
      cursor = null; // no stream here: the fallback below
    }
    if (stopped || mine !== generation) return;
    const ok = await read(mine);
    if (ok === null || stopped || mine !== generation) return;
    if (!ok || cursor === null) {
      timer = setTimeout(resync, FALLBACK_MS);
      return;
    }
    filters.set('after', cursor);
    stream = follow('/events', filters, {
      types: LIFECYCLE_TYPES,
      onEvent: (ev) => onEvent(ev, mine),
      onGap: () => { read(mine); }, // events were missed: the window once more, then on
      onLive: () => { live = true; render(); },
      onLost: () => { live = false; status.dataset.live = 'false'; status.textContent = 'Connection lost; reconnecting and resuming…'; },
      onRefused: () => {
        if (mine !== generation) return;
        stream.close(); stream = null; live = false; render();
        timer = setTimeout(resync, FALLBACK_MS);
      },
    });
    ticker = setInterval(() => { if (!stopped) render(); }, REDRAW_MS);
  }

  // refreshTop asks for the top list again, at most once every REDRAW_MS: a busy window changes
  // with every event, and the list is a sum the server computes.
  let topAt = 0;
  let topPending = null;
  function refreshTop(since, now) {
    const wait = topAt + REDRAW_MS - Date.now();
    if (wait > 0) {
      if (!topPending) topPending = setTimeout(() => { topPending = null; if (!stopped) render(true); }, wait);
      return;
    }
    topAt = Date.now();
    loadTop(since, now).catch((err) => { status.textContent += ` · could not load the top conversations: ${errorText(err)}`; });
  }

  // loadTop asks the server for the window's most expensive conversations (GET /v1/usage).
  async function loadTop(since, now) {
    const q = new URLSearchParams({ groupBy: 'conversation', limit: String(TOP_CONVERSATIONS),
      from: new Date(since).toISOString(), to: new Date(now + 60000).toISOString() });
    let report;
    try {
      report = await get(`/usage?${q}`);
    } catch (err) {
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        topSection.hidden = true; // a server without the usage extension
        return;
      }
      throw err;
    }
    topSection.hidden = false;
    const groups = report.groups.filter((g) => g.total.totalTokens || g.total.costs.length);
    replace(top,
      h('thead', {}, h('tr', {}, ['Conversation', 'Executions', 'Tokens', 'Cost'].map((t) => h('th', { scope: 'col' }, t)))),
      h('tbody', {}, groups.length ? groups.map((g) => h('tr', { 'data-key': g.key },
        h('td', {}, h('a', { href: `#/conversations/${enc(g.key)}`, class: 'mono' }, g.key)),
        h('td', {}, g.total.executions), h('td', {}, g.total.totalTokens),
        h('td', {}, money(Object.fromEntries(g.total.costs.map((c) => [c.currency, micros(c.amount)]))))))
        : h('tr', {}, h('td', { colspan: 4 }, 'No usage reported in this window.'))));
  }

  function draw(rows, since, now, minutes) {
    // By state.
    const counts = SHOWN_STATES.map((s) => rows.filter((x) => x.state === s).length);
    // Starts and durations per bucket of the window, by creation time.
    const bucketMs = (minutes * 60000) / BUCKETS;
    const starts = new Array(BUCKETS).fill(0);
    const perBucket = Array.from({ length: BUCKETS }, () => []);
    const all = [];
    for (const x of rows) {
      const i = Math.min(BUCKETS - 1, Math.floor((Date.parse(x.createdAt) - since) / bucketMs));
      if (i < 0) continue;
      starts[i]++;
      if (TERMINAL.has(x.state) && x.endedAt) {
        const ms = Date.parse(x.endedAt) - Date.parse(x.createdAt);
        perBucket[i].push(ms);
        all.push(ms);
      }
    }
    all.sort((a, b) => a - b);
    for (const b of perBucket) b.sort((a, c) => a - c);
    const p50 = percentile(all, 50);
    const p99 = percentile(all, 99);
    setFigure(figures.total, rows.length, String(rows.length));
    setFigure(figures.ended, all.length, String(all.length));
    setFigure(figures.p50, p50, p50 === undefined ? '–' : duration(p50));
    setFigure(figures.p99, p99, p99 === undefined ? '–' : duration(p99));
    // Usage: totals, and tokens per provider per bucket.
    let tokens = 0;
    const cost = {};
    const providers = [];
    const tokensBy = {}; // provider → tokens per bucket
    for (const x of rows) {
      const u = usageOf(x);
      tokens += u.tokens;
      for (const [c, m] of Object.entries(u.cost)) cost[c] = (cost[c] || 0) + m;
      const i = Math.min(BUCKETS - 1, Math.floor((Date.parse(x.createdAt) - since) / bucketMs));
      if (i < 0 || !u.tokens) continue;
      if (!tokensBy[x.providerId]) {
        providers.push(x.providerId);
        tokensBy[x.providerId] = new Array(BUCKETS).fill(0);
      }
      tokensBy[x.providerId][i] += u.tokens;
    }
    setFigure(figures.tokens, tokens, tokens.toLocaleString());
    usageEmpty.hidden = tokens > 0 || Object.keys(cost).length > 0;
    setFigure(figures.cost, money(cost) === '–' ? undefined : money(cost), money(cost));

    // Each bucket is drawn at its middle; uPlot's time axis is in seconds.
    const xs = starts.map((_, i) => (since + (i + 0.5) * bucketMs) / 1000);
    const p50s = perBucket.map((b) => (b.length ? percentile(b, 50) / 1000 : null));
    const p99s = perBucket.map((b) => (b.length ? percentile(b, 99) / 1000 : null));
    const per = bucketMs >= 60000 ? `${bucketMs / 60000} min` : `${bucketMs / 1000} s`;
    charts.starts.caption.textContent = `Starts per ${per === '1 min' ? 'minute' : per}`;

    for (const p of plots.splice(0)) p.destroy();
    const bars = uPlot.paths.bars({ size: [0.7, 40] });
    const at = (i) => new Date(since + i * bucketMs).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: bucketMs < 60000 ? '2-digit' : undefined });

    plots.push(plot(charts.states, {
      scales: { x: { time: false, range: [-0.5, SHOWN_STATES.length - 0.5] }, y: { range: [0, Math.max(1, ...counts)] } },
      // Eight names fit side by side on a desk; on a phone they are slanted so they do not overlap.
      axes: [{ splits: () => SHOWN_STATES.map((_, i) => i), values: (u, splits) => splits.map((i) => SHOWN_STATES[i]?.replace('awaiting_', '') ?? ''),
        rotate: chartWidth(charts.states) < 560 ? -40 : 0, size: chartWidth(charts.states) < 560 ? 64 : 36, gap: 4 },
        { splits: integerSplits }],
      series: [{}, { label: 'executions', fill: COLORS.accent, stroke: COLORS.accent, paths: bars, points: { show: false } }],
    }, [SHOWN_STATES.map((_, i) => i), counts]));
    table(charts.states, ['State', 'Executions'], SHOWN_STATES.map((s, i) => ({ key: s, cells: [s.replace('_', ' '), counts[i]] })));

    plots.push(plot(charts.starts, {
      scales: { x: { time: true, range: [since / 1000, now / 1000] }, y: { range: [0, Math.max(1, ...starts)] } },
      axes: [{}, { splits: integerSplits }],
      series: [{}, { label: 'starts', fill: COLORS.accent, stroke: COLORS.accent, paths: bars, points: { show: false } }],
    }, [xs, starts]));
    table(charts.starts, ['From', 'Starts'], starts.map((n, i) => ({ key: String(i), cells: [at(i), n] })).filter((r) => r.cells[1] > 0));

    plots.push(plot(charts.durations, {
      scales: { x: { time: true, range: [since / 1000, now / 1000] }, y: { range: (u, min, max) => [0, Math.max(1, (max ?? 1) * 1.1)] } }, // headroom: the top point stays whole
      axes: [{}, { values: (u, splits) => splits.map((s) => duration(s * 1000)), size: 70 }],
      series: [{}, { label: 'p50', stroke: COLORS.p50, width: 2, points: { show: true, size: 6, fill: COLORS.p50 } },
        { label: 'p99', stroke: COLORS.p99, width: 2, dash: [6, 4], points: { show: true, size: 6, fill: COLORS.p99 } }],
    }, [xs, p50s, p99s]));
    table(charts.durations, ['From', 'Ended', 'p50', 'p99'], perBucket.map((b, i) => ({ key: String(i), cells: [at(i), b.length,
      b.length ? duration(percentile(b, 50)) : '', b.length ? duration(percentile(b, 99)) : ''] })).filter((r) => r.cells[1] > 0));

    const most = Math.max(1, ...starts.map((_, i) => providers.reduce((n, p) => n + tokensBy[p][i], 0)));
    plots.push(plot(charts.usage, {
      scales: { x: { time: true, range: [since / 1000, now / 1000] }, y: { range: [0, most * 1.1] } },
      axes: [{}, { splits: integerSplits, size: 60 }],
      series: [{}, ...providers.map((p, k) => ({ label: p, stroke: SERIES_COLORS[k % SERIES_COLORS.length], width: 2,
        points: { show: true, size: 6, fill: SERIES_COLORS[k % SERIES_COLORS.length] } }))],
    }, [xs, ...providers.map((p) => tokensBy[p].map((n) => (n ? n : null)))]));
    table(charts.usage, ['From', ...providers], starts.map((_, i) => ({ key: String(i), cells: [at(i), ...providers.map((p) => tokensBy[p][i])] }))
      .filter((r) => r.cells.slice(1).some((n) => n > 0)));
  }

  function plot(chart, opts, data) {
    return new uPlot({
      width: chartWidth(chart), height: 200,
      legend: { show: opts.series.length > 2 }, cursor: { drag: { x: false, y: false } },
      ...opts,
    }, data, chart.canvas);
  }

  function onResize() {
    for (const [i, chart] of [charts.states, charts.starts, charts.durations, charts.usage].entries()) {
      if (plots[i]) plots[i].setSize({ width: chartWidth(chart), height: 200 });
    }
  }
  window.addEventListener('resize', onResize);

  (async () => {
    try {
      const rt = await get('/runtime');
      for (const m of rt.providers || []) provider.append(h('option', { value: m.id }, `${m.name} (${m.id})`));
    } catch {
      // The list of providers is a convenience; the filter still works from the address.
    }
    if (wantedProvider && ![...provider.options].some((o) => o.value === wantedProvider)) {
      provider.append(h('option', { value: wantedProvider }, wantedProvider));
    }
    provider.value = wantedProvider;
    if (!stopped) resync();
  })();

  return () => {
    stopped = true;
    clearTimeout(timer);
    clearInterval(ticker);
    if (stream) stream.close();
    window.removeEventListener('resize', onResize);
    for (const p of plots.splice(0)) p.destroy();
  };
}

// chartFigure is a chart's place: a caption, the canvas's parent, and its numbers as a table.
function chartFigure(id, title) {
  const caption = h('figcaption', {}, title);
  const canvas = h('div', { class: 'chart', 'aria-hidden': 'true' });
  const data = h('table', { class: 'chart-data' });
  const figure = h('figure', { id, class: 'chart-figure' }, caption, canvas,
    h('details', {}, h('summary', {}, 'As a table'), data));
  return { figure, caption, canvas, data };
}

// chartWidth fits a chart to its place in the layout: the width of its (block) container.
function chartWidth(chart) {
  return Math.max(240, Math.floor(chart.canvas.clientWidth || 480));
}

function table(chart, headings, rows) {
  replace(chart.data,
    h('thead', {}, h('tr', {}, headings.map((t) => h('th', { scope: 'col' }, t)))),
    h('tbody', {}, rows.length ? rows.map((r) => h('tr', { 'data-key': r.key }, r.cells.map((c) => h('td', {}, c))))
      : h('tr', {}, h('td', { colspan: headings.length }, 'Nothing in this window.'))));
}

function setFigure(el, value, text) {
  el.textContent = text;
  if (value === undefined) delete el.dataset.value;
  else el.dataset.value = String(value);
}

// integerSplits puts ticks of a count axis on whole numbers only.
function integerSplits(u, axisIdx, min, max) {
  const step = Math.max(1, Math.ceil((max - min) / 5));
  const out = [];
  for (let v = Math.ceil(min); v <= max; v += step) out.push(v);
  return out;
}
