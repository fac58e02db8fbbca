// The list of executions: newest first, filtered by state, paged by the server's cursor.
//
// Live from one stream (live.js): the tenant's lifecycle events (GET /v1/events?lifecycle=true),
// opened at the cursor of now taken before the listing's page is read, so nothing falls between
// them. After that first read the page asks the listing nothing more while it follows: an event
// changes a shown row's state; an execution not shown (a new one, or an older one entering the
// filtered state) has its snapshot read once and, on the first page, takes its place by creation
// time. A stream that cannot be opened falls back to re-reading the page every FALLBACK_MS, said
// in the status line. Paging and a filter change read the listing again: the person asked.
//
// The listing is an extension (GET /v1/executions). A server without it answers 404 or 405; the
// view then says so and keeps what works without it: opening an execution by id, starting one.

import { get, ApiError, STATES, enc } from './api.js';
import { h, replace, stateBadge, when, errorText } from './dom.js';
import { FALLBACK_MS, LIFECYCLE_TYPES, CONVERSATION_DELETED, applyEvent, cursorOfNow, follow, noStreams } from './live.js';

const PAGE_SIZE = 20;

export function renderList(main) {
  const filter = h('select', { id: 'state-filter', name: 'state' },
    h('option', { value: '' }, 'All states'),
    STATES.map((s) => h('option', { value: s }, s.replace('_', ' '))));
  const body = h('tbody', { id: 'list-body' });
  const table = h('table', { id: 'executions', class: 'executions' },
    h('caption', { class: 'visually-hidden' }, 'Executions, newest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Execution'), h('th', { scope: 'col' }, 'State'),
      h('th', { scope: 'col' }, 'Provider'), h('th', { scope: 'col' }, 'Input'),
      h('th', { scope: 'col' }, 'Created'))),
    body);
  const newest = h('button', { type: 'button', id: 'page-newest' }, 'Newest');
  const newer = h('button', { type: 'button', id: 'page-newer' }, '← Newer');
  const older = h('button', { type: 'button', id: 'page-older' }, 'Older →');
  const status = h('p', { class: 'status', id: 'list-status' });
  const notice = h('div', { id: 'listing-notice', role: 'status', 'aria-live': 'polite' });
  const listing = h('section', { 'aria-labelledby': 'list-title' },
    h('div', { class: 'toolbar' },
      h('label', { for: 'state-filter' }, 'State '), filter),
    table,
    h('nav', { class: 'pager', 'aria-label': 'Pages' }, newest, newer, older),
    status);

  const openId = h('input', { id: 'open-id', name: 'id', required: true, autocomplete: 'off', placeholder: 'exec_…', spellcheck: 'false' });
  const openForm = h('form', { class: 'inline', id: 'open-form', onsubmit: (e) => {
    e.preventDefault();
    const id = openId.value.trim();
    if (id) location.hash = `#/executions/${enc(id)}`;
  } }, h('label', { for: 'open-id' }, 'Open execution by id '), openId, h('button', { type: 'submit' }, 'Open'));

  main.append(h('h2', { id: 'list-title' }, 'Executions'), notice, openForm,
    h('p', {}, h('a', { href: '#/new', class: 'button' }, 'Start an execution')), listing);

  // cursors[i] is the cursor of page i; page 0 starts at the newest.
  let cursors = [''];
  let page = 0;
  let nextCursor = null;
  let rows = []; // the executions shown, newest first
  let shown = null; // what the table shows, to leave the DOM (and focus) alone when nothing changed
  let stale = false; // page 0 let rows go to newer ones: nextCursor no longer follows its last row
  let stream = null;
  let live = false;
  let reading = null; // events that arrive while the listing is read, applied after it
  const fetching = new Map(); // execution id → its events, while its snapshot is read
  let timer = null;
  let stopped = false;

  const matches = (x) => !filter.value || x.state === filter.value;
  const newestFirst = (a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? 1 : -1) : (a.createdAt < b.createdAt ? 1 : -1));

  function draw() {
    const signature = JSON.stringify(rows.map((x) => [x.id, x.state, x.updatedAt]));
    if (signature !== shown) {
      shown = signature;
      replace(body, rows.length ? rows.map(row)
        : h('tr', {}, h('td', { colspan: 5 }, filter.value ? `No ${filter.value.replace('_', ' ')} executions.` : 'No executions yet.')));
    }
    newest.disabled = page === 0;
    newer.disabled = page === 0;
    older.disabled = !nextCursor && !stale;
    status.dataset.live = String(live);
    status.textContent = live
      ? `Page ${page + 1} · live: changes appear as they happen`
      : `Page ${page + 1} · updated ${new Date().toLocaleTimeString()} · no live stream from this server, so re-read every ${FALLBACK_MS / 1000} s`;
  }

  // read reads the current page from the listing. Events that arrive meanwhile are applied after
  // it (applyEvent leaves alone what the page already has).
  async function read() {
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (filter.value) params.set('state', filter.value);
    if (cursors[page]) params.set('after', cursors[page]);
    reading = reading || [];
    try {
      const list = await get(`/executions?${params}`);
      if (stopped) return false;
      nextCursor = list.nextCursor || null;
      stale = false;
      rows = list.executions;
      // Applied with reading cleared first: onEvent buffers while reading is set, so applying
      // the buffer with it still set would append each event to the array being walked.
      const buffered = reading;
      reading = null;
      for (const ev of buffered) onEvent(ev);
      return true;
    } catch (err) {
      if (stopped) return false;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        listing.hidden = true;
        replace(notice, h('p', { class: 'notice' },
          'This server does not list executions (the listing extension, GET /v1/executions, is not in this build). ',
          'Open an execution by its id, or start one.'));
        stop();
        throw err;
      }
      status.textContent = `Could not load executions: ${errorText(err)} · retrying`;
      return false;
    } finally {
      reading = null;
      if (!stopped) draw();
    }
  }

  // place puts an execution the page had not shown where it belongs, if it does: on the first
  // page, in the filter, and newer than the page's last row (or the page holds every execution).
  function place(x) {
    if (page !== 0 || !matches(x) || rows.some((r) => r.id === x.id)) return;
    const last = rows[rows.length - 1];
    if (rows.length >= PAGE_SIZE && last && newestFirst(x, last) > 0) return;
    if (rows.length < PAGE_SIZE && nextCursor && last && newestFirst(x, last) > 0) return;
    rows = [...rows, x].sort(newestFirst);
    if (rows.length > PAGE_SIZE) {
      rows = rows.slice(0, PAGE_SIZE);
      stale = true; // the row that left is now the first of the next page
    }
  }

  function onEvent(ev) {
    if (reading) { reading.push(ev); return; }
    if (ev.type === CONVERSATION_DELETED) {
      // Its executions were erased with it: their rows go (the page is shorter until it is read).
      const left = rows.filter((x) => x.conversationId !== ev.conversationId);
      if (left.length !== rows.length) { rows = left; draw(); }
      return;
    }
    const waiting = fetching.get(ev.executionId);
    if (waiting) { waiting.push(ev); return; }
    const i = rows.findIndex((x) => x.id === ev.executionId);
    if (i >= 0) {
      const x = applyEvent(rows[i], ev);
      if (x === rows[i]) return;
      rows = matches(x) ? rows.with(i, x) : rows.toSpliced(i, 1);
      draw();
      return;
    }
    if (page !== 0) return; // an older page only follows the rows it shows
    // Not shown: its snapshot (the events carry no input), once, then where it belongs.
    fetching.set(ev.executionId, [ev]);
    get(`/executions/${enc(ev.executionId)}`).then((x) => {
      const events = fetching.get(ev.executionId) || [];
      fetching.delete(ev.executionId);
      if (stopped) return;
      for (const e of events) x = applyEvent(x, e);
      place(x);
      draw();
    }, () => { fetching.delete(ev.executionId); }); // gone meanwhile (retention): nothing to show
  }

  // resync reads the page and follows the stream from then on: at the start, and in the fallback.
  async function resync() {
    clearTimeout(timer);
    let cursor = null;
    let streams = !stream;
    try {
      if (streams) cursor = await cursorOfNow(new URLSearchParams({ lifecycle: 'true' }));
    } catch (err) {
      streams = false;
      if (!noStreams(err)) status.textContent = `Could not reach the event stream: ${errorText(err)}`;
    }
    if (stopped) return;
    try {
      await read();
    } catch {
      return; // no listing: nothing to follow
    }
    if (stopped) return;
    if (streams) {
      stream = follow('/events', new URLSearchParams({ lifecycle: 'true', after: cursor }), {
        types: [...LIFECYCLE_TYPES, CONVERSATION_DELETED],
        onEvent,
        onGap: () => { read(); }, // events were missed: the page once more, then on
        onLive: () => { live = true; draw(); },
        onLost: () => { live = false; status.textContent = `Page ${page + 1} · connection lost; reconnecting and resuming…`; },
        onRefused: () => { stream.close(); stream = null; live = false; draw(); timer = setTimeout(resync, FALLBACK_MS); },
      });
    } else if (!stream) {
      timer = setTimeout(resync, FALLBACK_MS);
    }
  }

  async function restart() {
    shown = null;
    if (page === 1 && stale) {
      // Rows moved from the live first page to the next: its cursor is read afresh.
      page = 0;
      try { await read(); } catch { return; }
      if (!nextCursor) { draw(); return; }
      cursors = ['', nextCursor];
      page = 1;
    }
    try { await read(); } catch { /* said by read */ }
  }
  filter.addEventListener('change', () => { cursors = ['']; page = 0; restart(); });
  newest.addEventListener('click', () => { cursors = ['']; page = 0; restart(); });
  newer.addEventListener('click', () => { if (page > 0) { page--; restart(); } });
  older.addEventListener('click', () => {
    if (!nextCursor && !stale) return;
    cursors = cursors.slice(0, page + 1);
    cursors.push(nextCursor);
    page++;
    restart();
  });

  function stop() {
    stopped = true;
    clearTimeout(timer);
    if (stream) stream.close();
  }
  resync();
  return stop;
}

function row(x) {
  const input = x.input.length > 80 ? `${x.input.slice(0, 80)}…` : x.input;
  return h('tr', { 'data-id': x.id },
    h('td', { 'data-label': 'Execution' }, h('a', { href: `#/executions/${enc(x.id)}`, class: 'mono' }, x.id)),
    h('td', { 'data-label': 'State' }, stateBadge(x.state)),
    h('td', { 'data-label': 'Provider' }, x.providerId),
    h('td', { 'data-label': 'Input' }, input),
    h('td', { 'data-label': 'Created' }, h('time', { datetime: x.createdAt }, when(x.createdAt))));
}
