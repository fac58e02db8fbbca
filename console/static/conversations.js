// The Conversations page: the tenant's conversations, most recently active first
// (GET /v1/conversations, an extension: docs/protocol.md §15.11), each with its title, what was
// last said and answered, the state of its latest turn, its number of executions and when it was
// last active; "More" reads the next page. "New chat" creates one and opens it; each row renames
// and deletes (manage.js).
//
// Live from the tenant's stream (live.js), as the inbox is: a turn started, answered or ended in
// any conversation reads the first page again, a burst of events once (the listing computes
// previews, counts and the order, so the page does not guess them from events, which carry no
// input). The fresh first page replaces what it covers: a conversation that became active moves
// to the top; one that should be on it and is not was deleted elsewhere and goes. Rows from the
// pages read with "More" stay. A `conversation.deleted` message (the tenant stream carries one
// for each conversation erased, whatever its filter) takes that row away at once. The stream is opened at the cursor of now taken before the first
// read, so nothing between them is missed. A server without streams is read every FALLBACK_MS.

import { get, post, request, ApiError, enc } from './api.js';
import { h, replace, stateBadge, when, errorText } from './dom.js';
import { FALLBACK_MS, LIFECYCLE_TYPES, CONVERSATION_DELETED, cursorOfNow, follow, noStreams } from './live.js';
import { manageControls, conversationName, takeDeletedNotice } from './manage.js';

const PAGE_SIZE = 20;
const GATHER_MS = 150; // how long a burst of events is gathered before the page is read again

// The busy policy a chat begun here gets: a line sent while a turn runs waits for it, as in
// `harnessctl chat`.
const DEFAULT_POLICY = 'enqueue';

export function renderConversations(main) {
  const said = h('p', { id: 'conversations-result', role: 'status', 'aria-live': 'polite' }, takeDeletedNotice());
  const list = h('ul', { class: 'conversations', id: 'conversations' });
  const more = h('button', { type: 'button', id: 'conversations-more', hidden: true }, 'More');
  const status = h('p', { class: 'status', id: 'conversations-status' }, 'Loading…');
  const notice = h('div', { id: 'conversations-notice', role: 'status' });
  main.append(h('h2', { id: 'conversations-title' }, 'Conversations'), newChatForm(), said, notice, list,
    h('nav', { class: 'pager', 'aria-label': 'More conversations' }, more), status);

  let rows = []; // the summaries shown, most recently active first
  const elements = new Map(); // conversation id → { el, signature, controls }: kept across reads
  let nextCursor = null; // where "More" goes on
  let pagesRead = 0;
  let stream = null;
  let live = false;
  let gather = null;
  let timer = null;
  let stopped = false;
  let latest = 0; // the newest read of the first page; an older one still in flight is dropped

  // Most recently active first, then id descending: the listing's own order.
  const order = (a, b) => (a.lastActivityAt === b.lastActivityAt ? (a.id < b.id ? 1 : -1) : (a.lastActivityAt < b.lastActivityAt ? 1 : -1));

  function draw() {
    if (!rows.length) {
      replace(list, h('li', { class: 'hint', id: 'conversations-empty' }, 'No conversations yet: begin one with New chat.'));
    } else {
      list.querySelector('#conversations-empty')?.remove();
      const present = new Set();
      rows.forEach((c, index) => {
        present.add(c.id);
        let e = elements.get(c.id);
        if (!e) {
          e = { controls: manageControls(c, { idPrefix: `manage-${c.id}`, onRenamed: renamed, onDeleted: (text) => deleted(c.id, text) }) };
          elements.set(c.id, e);
        }
        e.controls.update(c);
        const signature = JSON.stringify([c.title, c.lastActivityAt, c.executionCount, c.latestExecution]);
        if (e.signature !== signature) {
          e.signature = signature;
          const el = rowElement(c, e.controls.box);
          if (e.el) e.el.replaceWith(el);
          e.el = el;
        }
        if (list.children[index] !== e.el) list.insertBefore(e.el, list.children[index] || null);
      });
      for (const [id, e] of elements) {
        if (!present.has(id)) { e.el?.remove(); elements.delete(id); }
      }
    }
    more.hidden = !nextCursor;
    status.dataset.live = String(live);
    status.textContent = `${rows.length} shown${nextCursor ? ', more with More' : ''} · `
      + (live ? 'live: a turn in any conversation moves it to the top' : `no live stream from this server, so re-read every ${FALLBACK_MS / 1000} s`);
  }

  function renamed(c) {
    rows = rows.map((r) => (r.id === c.id ? { ...r, title: c.title } : r));
    draw();
  }
  function deleted(id, text) {
    said.textContent = text;
    rows = rows.filter((r) => r.id !== id);
    draw();
  }

  // readFirst reads the first page and puts it in place of what it covers (see the top).
  async function readFirst() {
    const mine = ++latest;
    try {
      const page = await get(`/conversations?limit=${PAGE_SIZE}`);
      if (stopped || mine !== latest) return true;
      const fresh = new Map(page.conversations.map((c) => [c.id, c]));
      const last = page.conversations[page.conversations.length - 1];
      // A kept row that sorts inside the fresh page but is not on it is gone (deleted elsewhere).
      const kept = rows.filter((r) => !fresh.has(r.id) && page.nextCursor && last && order(r, last) > 0);
      rows = [...page.conversations, ...kept].sort(order);
      if (pagesRead <= 1) nextCursor = page.nextCursor || null;
      pagesRead = Math.max(pagesRead, 1);
      draw();
      return true;
    } catch (err) {
      if (stopped || mine !== latest) return true;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        list.hidden = true;
        status.textContent = '';
        replace(notice, h('p', { class: 'notice' },
          'This server does not list conversations (GET /v1/conversations, an extension, is not in this build). ',
          'Open a conversation from one of its executions.'));
        return false;
      }
      status.textContent = `Could not load the conversations: ${errorText(err)} · retrying`;
      return true;
    }
  }

  more.addEventListener('click', async () => {
    if (!nextCursor) return;
    more.disabled = true;
    try {
      const page = await get(`/conversations?limit=${PAGE_SIZE}&after=${enc(nextCursor)}`);
      if (stopped) return;
      const shown = new Set(rows.map((r) => r.id));
      rows = [...rows, ...page.conversations.filter((c) => !shown.has(c.id))].sort(order);
      nextCursor = page.nextCursor || null;
      pagesRead++;
      draw();
    } catch (err) {
      status.textContent = `Could not load more: ${errorText(err)}`;
    } finally {
      more.disabled = false;
    }
  });

  function changed(ev) {
    if (ev?.type === CONVERSATION_DELETED) {
      // Deleted here or elsewhere: its row goes at once, from whichever page it came.
      rows = rows.filter((r) => r.id !== ev.conversationId);
      draw();
      return;
    }
    if (gather) return;
    gather = setTimeout(() => { gather = null; if (!stopped) readFirst(); }, GATHER_MS);
  }

  async function poll() {
    if (await readFirst() && !stopped && !live) timer = setTimeout(poll, FALLBACK_MS);
  }

  async function start() {
    let cursor = null;
    try {
      cursor = await cursorOfNow(new URLSearchParams({ lifecycle: 'true' }));
    } catch (err) {
      if (!noStreams(err)) status.textContent = `Could not reach the event stream: ${errorText(err)}`;
    }
    if (stopped) return;
    if (!(await readFirst()) || stopped) return;
    if (cursor === null) { timer = setTimeout(poll, FALLBACK_MS); draw(); return; }
    stream = follow('/events', new URLSearchParams({ lifecycle: 'true', after: cursor }), {
      types: [...LIFECYCLE_TYPES, CONVERSATION_DELETED],
      onEvent: changed,
      onGap: () => changed(),
      onLive: () => { live = true; clearTimeout(timer); draw(); },
      onLost: () => { live = false; status.textContent = 'Connection lost; reconnecting and resuming…'; },
      onRefused: () => { stream.close(); stream = null; live = false; poll(); },
    });
  }

  start();
  return () => { stopped = true; clearTimeout(timer); clearTimeout(gather); stream?.close(); };
}

// rowElement is one conversation: its name (linked to the chat), what was last asked and
// answered, its latest turn's state, its number of executions and its last activity.
function rowElement(c, controls) {
  const x = c.latestExecution;
  const count = `${c.executionCount} execution${c.executionCount === 1 ? '' : 's'}`;
  return h('li', { class: 'conversation-row', 'data-id': c.id },
    h('p', { class: 'conversation-name' },
      h('a', { href: `#/conversations/${enc(c.id)}`, class: c.title ? 'conversation-link' : 'conversation-link untitled' }, conversationName(c)),
      ' ', h('span', { class: 'mono hint' }, c.id)),
    x ? h('p', { class: 'preview' }, h('span', { class: 'who' }, 'You: '), h('span', { class: 'preview-input' }, x.inputPreview))
      : h('p', { class: 'preview hint' }, 'No turns yet.'),
    x?.outputPreview ? h('p', { class: 'preview' }, h('span', { class: 'who' }, 'Reply: '), h('span', { class: 'preview-output' }, x.outputPreview)) : null,
    h('p', { class: 'conversation-facts hint' },
      x ? stateBadge(x.state) : null, x ? ' · ' : '', h('span', { class: 'count' }, count), ' · last active ',
      h('time', { datetime: c.lastActivityAt }, when(c.lastActivityAt))),
    controls);
}

// newChatForm begins a conversation: POST /v1/conversations with the busy policy chosen, then
// PATCH its title when one was given (creation takes no title), then its view, where the
// message box has the focus (an empty conversation focuses it: conversation.js).
function newChatForm() {
  const title = h('input', { type: 'text', id: 'new-chat-title', name: 'title', maxlength: 200, autocomplete: 'off', placeholder: 'Optional' });
  const policy = h('select', { id: 'new-chat-policy', name: 'busyPolicy' },
    ['enqueue', 'reject', 'interrupt', 'parallel'].map((p) => h('option', { value: p, selected: p === DEFAULT_POLICY }, p)));
  const result = h('p', { id: 'new-chat-result', role: 'status', 'aria-live': 'polite' });
  const button = h('button', { type: 'submit', class: 'primary', id: 'new-chat' }, 'New chat');
  const form = h('form', { class: 'new-chat', id: 'new-chat-form', 'aria-label': 'New chat' },
    h('label', { for: 'new-chat-title' }, 'Title '), title,
    h('label', { for: 'new-chat-policy' }, 'A message sent while a turn runs '), policy,
    button, result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    button.disabled = true;
    result.className = '';
    result.textContent = 'Creating…';
    try {
      const conv = await post('/conversations', { busyPolicy: policy.value });
      if (title.value.trim()) {
        try {
          await request('PATCH', `/conversations/${enc(conv.id)}`, { title: title.value.trim() });
        } catch {
          // The chat exists: it opens all the same, and Rename there gives the title again.
        }
      }
      location.hash = `#/conversations/${enc(conv.id)}`;
    } catch (err) {
      result.className = 'error';
      result.textContent = `No chat created: ${errorText(err)}`;
      button.disabled = false;
    }
  });
  return form;
}
