// The list of executions: newest first, filtered by state, paged by the server's cursor.
//
// Live by polling the current page every POLL_MS. Why polling and not a stream: the protocol
// streams events per execution only; there is no feed of "all executions" to subscribe to, and one
// small GET every two seconds is cheap for the server, survives proxies and reconnects without any
// resume logic, and shows new executions and state changes within a poll. An open execution's
// own view streams its events live over SSE.
//
// The listing is an extension (GET /v1/executions). A server without it answers 404 or 405; the
// view then says so and keeps what works without it: opening an execution by id, starting one.

import { get, ApiError, STATES, enc } from './api.js';
import { h, replace, stateBadge, when, errorText } from './dom.js';

const POLL_MS = 2000;
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
  let shown = null; // what the table shows, to leave the DOM (and focus) alone when nothing changed
  let timer = null;
  let stopped = false;

  async function load() {
    clearTimeout(timer);
    const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
    if (filter.value) params.set('state', filter.value);
    if (cursors[page]) params.set('after', cursors[page]);
    try {
      const list = await get(`/executions?${params}`);
      if (stopped) return;
      nextCursor = list.nextCursor || null;
      const signature = JSON.stringify(list.executions.map((x) => [x.id, x.state, x.updatedAt]));
      if (signature !== shown) {
        shown = signature;
        replace(body, list.executions.length ? list.executions.map(row)
          : h('tr', {}, h('td', { colspan: 5 }, filter.value ? `No ${filter.value.replace('_', ' ')} executions.` : 'No executions yet.')));
      }
      newest.disabled = page === 0;
      newer.disabled = page === 0;
      older.disabled = !nextCursor;
      status.textContent = `Page ${page + 1} · updated ${new Date().toLocaleTimeString()} · refreshes every ${POLL_MS / 1000} s`;
    } catch (err) {
      if (stopped) return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        listing.hidden = true;
        replace(notice, h('p', { class: 'notice' },
          'This server does not list executions (the listing extension, GET /v1/executions, is not in this build). ',
          'Open an execution by its id, or start one.'));
        return; // nothing to poll
      }
      status.textContent = `Could not load executions: ${errorText(err)} · retrying`;
    }
    timer = setTimeout(load, POLL_MS);
  }

  function restart() {
    shown = null;
    load();
  }
  filter.addEventListener('change', () => { cursors = ['']; page = 0; restart(); });
  newest.addEventListener('click', () => { cursors = ['']; page = 0; restart(); });
  newer.addEventListener('click', () => { if (page > 0) { page--; restart(); } });
  older.addEventListener('click', () => {
    if (!nextCursor) return;
    cursors = cursors.slice(0, page + 1);
    cursors.push(nextCursor);
    page++;
    restart();
  });

  load();
  return () => { stopped = true; clearTimeout(timer); };
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
