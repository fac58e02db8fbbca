// The inbox: every action of this tenant waiting for an answer, across executions, oldest first
// (GET /v1/actions, an extension: docs/protocol.md, "Approvals"), each answered from its row with
// a typed decision — approve, reject with a message, edit the arguments, choose one of the
// agent's own options, or answer an input.
//
// Live from the tenant's stream (docs/protocol.md §15.8): an action asked or answered (here,
// elsewhere, by a rule or by its expiry) and an execution's end (which abandons what it asked)
// read the inbox again, a burst of them once. Rows that stay keep their elements (and what a
// person is typing in them). A server without the streams extension is read every POLL_MS.
//
// A row says what is being approved in its context: the conversation (its title when the server
// keeps one, else its id, linked to the chat) and the message that asked (the execution's input,
// shortened; read once per execution, since the action does not carry it).

import { get, post, ApiError, enc } from './api.js';
import { h, replace, when, errorText } from './dom.js';
import { renderRules } from './rules.js';
import { CONVERSATION_DELETED, cursorOfNow, follow, noStreams } from './live.js';

const POLL_MS = 2000;
const LIMIT = 200;
// The events after which the inbox may have changed, and how long a burst of them is gathered.
const WATCHED = ['action.required', 'action.responded', 'run.completed', 'run.failed', 'run.cancelled'];
const GATHER_MS = 150;
const INPUT_CHARS = 140; // how much of the asking message a row shows

export function renderInbox(main) {
  const body = h('tbody', { id: 'inbox-body' });
  const table = h('table', { id: 'inbox', class: 'executions' },
    h('caption', { class: 'visually-hidden' }, 'Actions waiting for an answer, oldest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Waiting for'), h('th', { scope: 'col' }, 'Conversation and message'),
      h('th', { scope: 'col' }, 'Asked'), h('th', { scope: 'col' }, 'Answer'))),
    body);
  const status = h('p', { class: 'status', id: 'inbox-status' });
  const notice = h('div', { id: 'inbox-notice', role: 'status', 'aria-live': 'polite' });
  const said = h('p', { id: 'inbox-result', role: 'status', 'aria-live': 'polite' });
  const rulesSection = h('section', { id: 'rules', 'aria-labelledby': 'rules-title' });
  main.append(h('h2', { id: 'inbox-title' }, 'Inbox'), notice, said, table, status, rulesSection);
  const rules = renderRules(rulesSection);

  const rows = new Map(); // action id → its row, kept across reads
  const context = contextReader();
  let timer = null;
  let stopped = false;
  let latest = 0; // the newest load; an older one still in flight neither draws nor re-arms
  let stream = null; // the tenant stream's EventSource while it is open
  let live = false; // the stream is connected: no polling
  let gather = null;

  async function load() {
    clearTimeout(timer);
    const mine = ++latest;
    try {
      const list = await get(`/actions?limit=${LIMIT}`);
      if (stopped || mine !== latest) return;
      const ids = new Set(list.actions.map((item) => item.action.id));
      for (const id of rows.keys()) if (!ids.has(id)) rows.delete(id);
      const children = list.actions.map((item) => {
        if (!rows.has(item.action.id)) rows.set(item.action.id, row(item, answered, context));
        return rows.get(item.action.id);
      });
      if (children.length) {
        if (children.length !== body.children.length || children.some((r, i) => body.children[i] !== r)) replace(body, children);
      } else {
        replace(body, h('tr', {}, h('td', { colspan: 4 }, 'Nothing is waiting for an answer.')));
      }
      const more = list.nextCursor ? ` (the oldest ${LIMIT} shown)` : '';
      const how = live ? 'live' : `refreshes every ${POLL_MS / 1000} s`;
      status.textContent = `${list.actions.length} waiting${more} · updated ${new Date().toLocaleTimeString()} · ${how}`;
    } catch (err) {
      if (stopped || mine !== latest) return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        table.hidden = true;
        replace(notice, h('p', { class: 'notice' },
          'This server has no inbox (GET /v1/actions, the approvals extension, is not in this build). ',
          'Open an execution to answer what it waits for.'));
        return;
      }
      status.textContent = `Could not load the inbox: ${errorText(err)} · retrying`;
      timer = setTimeout(load, POLL_MS);
      return;
    }
    if (!live) timer = setTimeout(load, POLL_MS);
  }

  // changed reads the inbox again once the events of a burst are in.
  function changed() {
    if (gather) return;
    gather = setTimeout(() => { gather = null; if (!stopped) load(); }, GATHER_MS);
  }

  // start takes the stream's cursor of now before the first read, so that nothing asked between
  // the read and the stream's opening is missed; without streams it polls.
  async function start() {
    let cursor = null;
    try {
      cursor = await cursorOfNow(new URLSearchParams({ type: WATCHED.join(',') }));
    } catch (err) {
      if (!noStreams(err)) status.textContent = `Could not reach the event stream: ${errorText(err)}`;
    }
    if (stopped) return;
    if (cursor === null) { load(); return; }
    stream = follow('/events', new URLSearchParams({ type: WATCHED.join(','), after: cursor }), {
      types: [...WATCHED, CONVERSATION_DELETED], // a deleted conversation's actions are gone with it
      onEvent: changed,
      onGap: changed,
      onLive: () => { live = true; clearTimeout(timer); load(); }, // (again after a reconnect: what passed meanwhile)
      onLost: () => { live = false; status.textContent = 'Connection lost; reconnecting…'; },
      onRefused: () => { stream.close(); stream = null; live = false; load(); },
    });
  }

  function answered(item, text) {
    said.className = '';
    said.textContent = text;
    rows.delete(item.action.id);
    load();
    rules.refresh(); // an *_always option leaves a rule
  }

  start();
  return () => { stopped = true; clearTimeout(timer); clearTimeout(gather); stream?.close(); rules.leave(); };
}

// row is one action with its answer controls. Every control sends one typed answer; the
// server checks it against the action (a refused one shows why, the row stays).
function row(item, answered, context) {
  const a = item.action;
  const tr = h('tr', { 'data-id': a.id, 'data-execution': a.executionId });
  const result = h('p', { class: 'row-result', role: 'status' });
  const message = h('input', { type: 'text', name: 'message', placeholder: 'Message to the agent (optional)', 'aria-label': `Message with the answer to ${a.title}`, class: 'message' });
  const controls = [];

  async function send(body, verb, button) {
    for (const el of tr.querySelectorAll('button, input, textarea')) el.disabled = true;
    result.className = 'row-result';
    result.textContent = 'Sending…';
    if (message.value.trim() && body.decision !== 'respond') body.message = message.value.trim();
    try {
      await post(`/executions/${enc(a.executionId)}/actions/${enc(a.id)}:respond`, body);
      answered(item, `You ${verb} “${a.title}” at ${new Date().toLocaleTimeString()}.`);
    } catch (err) {
      result.className = 'row-result error';
      if (err instanceof ApiError && (err.code === 'ACTION_ALREADY_RESOLVED' || err.code === 'ACTION_NOT_FOUND')) {
        answered(item, `“${a.title}” was answered elsewhere, expired or abandoned (${err.code}); your answer was not applied.`);
        return;
      }
      const field = err.details && Array.isArray(err.details.errors) ? err.details.errors[0] : null;
      result.textContent = `Not accepted: ${errorText(err)}${field ? ` — ${field.pointer ?? field.parameter ?? ''} ${field.reason}` : ''}`;
      for (const el of tr.querySelectorAll('button, input, textarea')) el.disabled = false;
      button?.focus();
    }
  }

  const options = Array.isArray(a.options) ? a.options : [];
  if (a.kind === 'approval') {
    const buttons = options.length
      ? options.map((o) => h('button', { type: 'button', class: o.kind.startsWith('reject') ? 'danger' : 'primary', 'data-option': o.optionId,
        onclick: (e) => send({ optionId: o.optionId }, `chose “${o.name || o.optionId}” for`, e.target) }, o.name || o.optionId))
      : [h('button', { type: 'button', class: 'primary', 'data-decision': 'approve', onclick: (e) => send({ decision: 'approve' }, 'approved', e.target) }, 'Approve'),
        h('button', { type: 'button', class: 'danger', 'data-decision': 'reject', onclick: (e) => send({ decision: 'reject' }, 'rejected', e.target) }, 'Reject')];
    controls.push(h('div', { class: 'buttons', role: 'group', 'aria-label': `Answer ${a.title}` }, buttons), message);
    if (a.arguments && (a.decisions || []).includes('edit')) {
      const args = h('textarea', { name: 'arguments', rows: 3, class: 'json', 'aria-label': `Arguments of ${a.title}` }, JSON.stringify(a.arguments, null, 2));
      controls.push(h('details', { class: 'edit' }, h('summary', {}, 'Edit the arguments'), args,
        h('button', { type: 'button', 'data-decision': 'edit', onclick: (e) => {
          let parsed;
          try {
            parsed = JSON.parse(args.value);
          } catch (err) {
            result.className = 'row-result error';
            result.textContent = `The arguments are not JSON: ${err.message}`;
            return;
          }
          send({ decision: 'edit', arguments: parsed }, 'approved with changes', e.target);
        } }, 'Approve with these arguments')));
    }
  } else {
    const value = h('input', { type: 'text', name: 'value', 'aria-label': `Answer to ${a.title}` });
    controls.push(h('form', { class: 'answer', onsubmit: (e) => { e.preventDefault(); send({ decision: 'respond', value: value.value }, 'answered', null); } },
      value, h('button', { type: 'submit', class: 'primary', 'data-decision': 'respond' }, 'Send'),
      h('button', { type: 'button', class: 'danger', 'data-decision': 'reject', onclick: (e) => send({ decision: 'reject' }, 'declined', e.target) }, 'Decline')),
    message);
  }
  tr.append(
    h('td', { 'data-label': 'Waiting for' }, h('strong', { class: 'title' }, a.title),
      a.description ? h('p', { class: 'hint' }, a.description) : null,
      h('p', { class: 'hint' }, `${a.kind}${a.toolKind ? ` · ${a.toolKind}` : ''} · ${item.providerId}`)),
    contextCell(item, context),
    h('td', { 'data-label': 'Asked' }, h('time', { datetime: a.createdAt }, when(a.createdAt)),
      a.expiresAt ? h('p', { class: 'hint expires' }, 'Expires ', h('time', { datetime: a.expiresAt }, when(a.expiresAt))) : null),
    h('td', { 'data-label': 'Answer' }, controls, result));
  return tr;
}

// contextReader reads, once each, what rows show of their context: an execution's input and a
// conversation's title. A failed read is forgotten, so the next row asks again.
function contextReader() {
  const executions = new Map(); // execution id → Promise of the execution
  const conversations = new Map(); // conversation id → Promise of the conversation
  const once = (cache, key, read) => {
    if (!cache.has(key)) cache.set(key, read().catch((err) => { cache.delete(key); throw err; }));
    return cache.get(key);
  };
  return {
    execution: (id) => once(executions, id, () => get(`/executions/${enc(id)}`)),
    conversation: (id) => once(conversations, id, () => get(`/conversations/${enc(id)}`)),
  };
}

// shorten cuts text to at most n characters on a word boundary, with an ellipsis.
export function shorten(text, n) {
  const flat = text.replace(/\s+/g, ' ').trim();
  if (flat.length <= n) return flat;
  const cut = flat.slice(0, n - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > n / 2 ? cut.slice(0, space) : cut}…`;
}

// contextCell names the conversation and quotes the message that asked, filled in as they are
// read; until then (or if they cannot be read) the ids say where the action comes from.
function contextCell(item, context) {
  const a = item.action;
  const conv = h('a', { class: 'conversation mono', href: `#/conversations/${enc(item.conversationId)}` }, item.conversationId);
  const asked = h('blockquote', { class: 'asked' });
  const exec = h('p', { class: 'hint' }, 'in ', h('a', { href: `#/executions/${enc(a.executionId)}`, class: 'mono' }, a.executionId));
  context.conversation(item.conversationId).then((c) => {
    if (typeof c.title === 'string' && c.title.trim()) {
      conv.textContent = c.title;
      conv.classList.remove('mono');
      conv.title = item.conversationId;
    }
  }, () => {});
  context.execution(a.executionId).then((x) => {
    asked.textContent = x.input ? `“${shorten(x.input, INPUT_CHARS)}”` : '(empty message)';
    asked.title = x.input;
  }, () => {});
  return h('td', { 'data-label': 'Conversation', class: 'context' }, conv, asked, exec);
}
