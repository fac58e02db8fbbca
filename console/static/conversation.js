// A conversation as a transcript: its executions oldest first, each one's input and what came of
// it (the final output, the error, "cancelled", or that it still runs or waits for an answer),
// with a link to the execution's own live view.
//
// Read from the listing extension (GET /v1/conversations/{id}/executions, newest first, paged) and
// refreshed every POLL_MS, like the list: there is no feed of a conversation's executions to
// subscribe to. A server without the listing says so; the conversation itself is still shown.

import { get, ApiError, TERMINAL, enc } from './api.js';
import { h, replace, stateBadge, when, errorText } from './dom.js';

const POLL_MS = 2000;
const PAGE_SIZE = 200; // the listing's largest page
const MAX_PAGES = 5; // a transcript of up to 1000 turns; older ones are said to be left out

export function renderConversation(main, id) {
  const meta = h('p', { class: 'hint', id: 'conversation-meta' });
  const status = h('p', { class: 'status', id: 'conversation-status', role: 'status' }, 'Loading…');
  const transcript = h('ol', { class: 'transcript', id: 'transcript' });
  const cont = h('p', {}, h('a', { class: 'button', id: 'conversation-continue', href: `#/new?conversation=${enc(id)}` },
    'Continue this conversation'));
  main.append(h('h2', {}, 'Conversation ', h('span', { class: 'mono', id: 'conversation-id' }, id)),
    meta, status, transcript, cont);

  let timer = null;
  let stopped = false;
  let shown = null;

  async function load() {
    clearTimeout(timer);
    try {
      const executions = [];
      let after = '';
      let truncated = false;
      for (let page = 0; ; page++) {
        if (page === MAX_PAGES) { truncated = true; break; }
        const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
        if (after) params.set('after', after);
        const list = await get(`/conversations/${enc(id)}/executions?${params}`);
        executions.push(...list.executions);
        if (!list.nextCursor) break;
        after = list.nextCursor;
      }
      if (stopped) return;
      executions.reverse(); // oldest first, as a conversation is read
      const signature = JSON.stringify(executions.map((x) => [x.id, x.state, x.updatedAt]));
      if (signature !== shown) {
        shown = signature;
        replace(transcript, executions.length ? executions.map(turn)
          : h('li', { class: 'hint' }, 'No executions in this conversation yet.'));
      }
      const live = executions.filter((x) => !TERMINAL.has(x.state)).length;
      status.textContent = `${executions.length} execution${executions.length === 1 ? '' : 's'}`
        + (truncated ? ` (the newest ${executions.length}; older ones are left out)` : '')
        + (live ? ` · ${live} still running` : '')
        + ` · refreshes every ${POLL_MS / 1000} s`;
    } catch (err) {
      if (stopped) return;
      if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND' && /Conversation/.test(err.message)) {
        status.textContent = '';
        replace(transcript, h('li', { class: 'error', id: 'conversation-error' }, `No conversation ${id} here (${err.code}).`));
        cont.hidden = true;
        return;
      }
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        replace(status, h('span', { class: 'notice', id: 'listing-notice' },
          'This server does not list a conversation\'s executions (the listing extension is not in this build).'));
        return;
      }
      status.textContent = `Could not load the conversation: ${errorText(err)} · retrying`;
    }
    timer = setTimeout(load, POLL_MS);
  }

  (async () => {
    try {
      const c = await get(`/conversations/${enc(id)}`);
      if (stopped) return;
      const keys = Object.keys(c.metadata || {});
      meta.textContent = `Created ${when(c.createdAt)}${keys.length ? ` · metadata: ${JSON.stringify(c.metadata)}` : ''}`;
    } catch (err) {
      if (!stopped) meta.textContent = `Could not read the conversation: ${errorText(err)}`;
    }
  })();
  load();
  return () => { stopped = true; clearTimeout(timer); };
}

// turn is one execution as a pair of messages: what was asked, and what came back.
function turn(x) {
  let reply;
  if (x.state === 'succeeded') {
    reply = h('div', { class: 'msg reply ok' }, x.finalOutput || '(no text)');
  } else if (x.state === 'failed') {
    reply = h('div', { class: 'msg reply error' }, `Failed: ${x.error ? `${x.error.code}: ${x.error.message}` : 'no error given'}`);
  } else if (x.state === 'cancelled') {
    reply = h('div', { class: 'msg reply muted' }, 'Cancelled.');
  } else if (x.state === 'awaiting_approval' || x.state === 'awaiting_input') {
    reply = h('div', { class: 'msg reply muted' }, `Waiting for ${x.state === 'awaiting_input' ? 'input' : 'approval'}: `,
      h('a', { href: `#/executions/${enc(x.id)}` }, 'answer it'));
  } else {
    reply = h('div', { class: 'msg reply muted' }, `${x.state.replace('_', ' ')}… `, h('a', { href: `#/executions/${enc(x.id)}` }, 'watch it live'));
  }
  return h('li', { class: 'turn', 'data-id': x.id, 'data-state': x.state },
    h('p', { class: 'turn-head' }, h('time', { datetime: x.createdAt }, when(x.createdAt)), ' · ', x.providerId, ' · ',
      stateBadge(x.state), ' · ', h('a', { href: `#/executions/${enc(x.id)}`, class: 'mono' }, x.id)),
    h('div', { class: 'msg input' }, x.input || '(empty input)'),
    reply);
}
