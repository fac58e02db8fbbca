// A conversation as a chat: its executions (turns) oldest first as a transcript — each input and
// what came of it: the final output, the error, "Cancelled.", what a queued turn waits for, or the
// question a turn waits to have answered, answered right there (action.js, as on the execution's
// own page) — and under it a message box that starts the next turn.
//
// What a message sent while a turn still runs does is the conversation's busy policy
// (docs/protocol.md §15.7), shown under the box: enqueue queues it (the transcript says what it
// waits for), reject refuses it (CONVERSATION_BUSY: the box keeps the message and says which turn
// is busy), interrupt cancels the running turn, parallel runs it beside.
//
// The view's data has one source, conversationFeed below: the conversation once, its executions
// from the listing extension (GET /v1/conversations/{id}/executions, newest first, paged) once,
// then the conversation's own stream (GET /v1/conversations/{id}/events, live.js): every event of
// every turn on one connection, so a reply's text appears as it is written, a turn's question,
// answer and end as they happen, and a turn started elsewhere has its snapshot read once (its
// input is not in the events). The stream starts at the conversation's beginning, so nothing
// between the listing and the stream is missed; what the listing already showed is left alone
// (applyEvent). A stream that cannot be opened falls back to reading the listing every
// FALLBACK_MS, said in the status line. A server without the listing says so; the conversation
// itself is still shown.

import { get, ApiError, TERMINAL, enc } from './api.js';
import { h, replace, stateBadge, when, errorText, cancelledText } from './dom.js';
import { createActionPanel } from './action.js';
import { createComposer } from './composer.js';
import { manageControls, conversationName, noteDeleted } from './manage.js';
import { FALLBACK_MS, CONVERSATION_DELETED, applyEvent, follow } from './live.js';
import { EVENT_TYPES } from './facts.gen.js';
const PAGE_SIZE = 200; // the listing's largest page
const MAX_PAGES = 5; // a transcript of up to 1000 turns; older ones are said to be left out

export function renderConversation(main, id) {
  const meta = h('p', { class: 'hint', id: 'conversation-meta' });
  const status = h('p', { class: 'status', id: 'conversation-status', role: 'status' }, 'Loading…');
  const transcript = h('ol', { class: 'transcript', id: 'transcript' });
  const composer = createComposer(id, (x) => feed.add(x));
  const cont = h('p', {}, h('a', { class: 'button secondary', id: 'conversation-continue', href: `#/new?conversation=${enc(id)}` },
    'Continue in the start form (capabilities)'));
  // The title (rename and delete beside it) once the conversation is read; the id stays.
  const name = h('span', { id: 'conversation-title' });
  const manage = h('div', { id: 'conversation-manage' });
  main.append(h('h2', {}, name, ' ', h('span', { class: 'mono hint', id: 'conversation-id' }, id)),
    meta, manage, status, transcript, composer.form, cont);

  const turns = new Map(); // execution id → { el, signature, panel }: kept across refreshes
  let stopped = false;
  let opened = false; // scrolled to the latest turn once
  let headerShown = false; // the conversation's title and controls are in place

  // showTurns puts the executions (oldest first) in the transcript. A turn's element is rebuilt
  // only when the turn changed, and its action panel is kept, so an answer being typed survives a
  // refresh.
  function showTurns(executions) {
    if (!executions.length) {
      turns.clear();
      replace(transcript, h('li', { class: 'hint', id: 'transcript-empty' }, 'No turns yet: write the first message below.'));
      return;
    }
    transcript.querySelector('#transcript-empty')?.remove();
    const present = new Set();
    executions.forEach((x, index) => {
      present.add(x.id);
      let t = turns.get(x.id);
      if (!t) {
        t = { panel: createActionPanel(x.id, { idPrefix: `action-${x.id}`, onSettled: () => feed.refresh() }) };
        turns.set(x.id, t);
      }
      const signature = JSON.stringify([x.state, x.updatedAt, x.waitingFor || [], x.pendingAction?.id ?? null, x.liveText ?? null, x.cancelReason ?? null]);
      if (t.signature !== signature) {
        t.signature = signature;
        const el = turnElement(x, t.panel);
        if (t.el) t.el.replaceWith(el);
        t.el = el;
      }
      if (transcript.children[index] !== t.el) transcript.insertBefore(t.el, transcript.children[index] || null);
    });
    for (const [xid, t] of turns) {
      if (!present.has(xid)) { t.el.remove(); turns.delete(xid); }
    }
  }

  const feed = conversationFeed(id, {
    conversation(c) {
      name.textContent = conversationName(c);
      const controls = manageControls(c, {
        idPrefix: 'conversation-manage',
        onRenamed: (next) => { name.textContent = conversationName(next); },
        onDeleted: (text) => { noteDeleted(text); location.hash = '#/conversations'; },
      });
      replace(manage, controls.box);
      // The header's controls may arrive after the turns were shown and scrolled to: they push
      // the message box down (by a button's height), so the first time, scroll to it again.
      if (opened && !headerShown) composer.form.scrollIntoView({ block: 'end' });
      headerShown = true;
      const keys = Object.keys(c.metadata || {});
      meta.textContent = `Created ${when(c.createdAt)}${keys.length ? ` · metadata: ${JSON.stringify(c.metadata)}` : ''}`;
      composer.showPolicy(c.busyPolicy);
    },
    conversationError(err) {
      meta.textContent = `Could not read the conversation: ${errorText(err)}`;
    },
    executions(executions, truncated, following) {
      showTurns(executions);
      if (!opened) {
        // A chat opens at its latest turn with the message box in view (a long transcript on a
        // phone put both below the fold): once, when the turns are first shown, so a person
        // who scrolls up to read is left where they are.
        opened = true;
        composer.form.scrollIntoView({ block: 'end' });
        // A chat without turns (New chat) is there to be written in: the box has the focus.
        if (!executions.length) composer.focus();
        status.dataset.opened = 'true';
      }
      composer.lastTurn(executions[executions.length - 1]);
      const live = executions.filter((x) => !TERMINAL.has(x.state)).length;
      status.dataset.live = String(following);
      status.textContent = `${executions.length} execution${executions.length === 1 ? '' : 's'}`
        + (truncated ? ` (the newest ${executions.length}; older ones are left out)` : '')
        + (live ? ` · ${live} still running` : '')
        + (following ? ' · live' : ` · no live stream from this server, so re-read every ${FALLBACK_MS / 1000} s`);
    },
    deleted() {
      stopped = true;
      status.textContent = '';
      replace(transcript, h('li', { class: 'notice', id: 'conversation-deleted' }, `This conversation (${id}) was deleted: nothing of it is kept.`));
      for (const el of [manage, composer.form, cont]) el.hidden = true;
    },
    lost() {
      status.dataset.live = 'false';
      status.textContent = 'Connection lost; reconnecting and resuming…';
    },
    // Returns whether to keep polling.
    executionsError(err) {
      if (err instanceof ApiError && err.status === 404 && err.code === 'NOT_FOUND' && /Conversation/.test(err.message)) {
        status.textContent = '';
        replace(transcript, h('li', { class: 'error', id: 'conversation-error' }, `No conversation ${id} here (${err.code}).`));
        cont.hidden = true;
        composer.form.hidden = true;
        return false;
      }
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        replace(status, h('span', { class: 'notice', id: 'listing-notice' },
          'This server does not list a conversation\'s executions (the listing extension is not in this build).'));
        return false;
      }
      status.textContent = `Could not load the conversation: ${errorText(err)} · retrying`;
      return true;
    },
    stopped: () => stopped,
  });

  return () => { stopped = true; feed.stop(); };
}

// conversationFeed is where the view's data comes from (see the top of this file): it calls
// view.conversation once, and view.executions (oldest first) after the listing is read and after
// each event that changes a turn. refresh() reads the listing again (only needed without a
// stream); add(x) shows an execution the page itself started.
function conversationFeed(id, view) {
  let timer = null;
  let turns = new Map(); // execution id → the execution, with liveText while it writes
  let truncated = false;
  let stream = null;
  let following = false;
  let reading = null; // events that arrive while the listing is read, applied after it
  const fetching = new Map(); // execution id → its events, while its snapshot is read
  const lastSeq = new Map(); // execution id → the last sequence applied (delivery is at least once)

  (async () => {
    try {
      const c = await get(`/conversations/${enc(id)}`);
      if (!view.stopped()) view.conversation(c);
    } catch (err) {
      if (!view.stopped()) view.conversationError(err);
    }
  })();

  async function executions() {
    const all = [];
    let after = '';
    for (let page = 0; ; page++) {
      if (page === MAX_PAGES) return { all: all.reverse(), truncated: true };
      const params = new URLSearchParams({ limit: String(PAGE_SIZE) });
      if (after) params.set('after', after);
      const list = await get(`/conversations/${enc(id)}/executions?${params}`);
      all.push(...list.executions);
      if (!list.nextCursor) return { all: all.reverse(), truncated: false }; // oldest first, as a conversation is read
      after = list.nextCursor;
    }
  }

  const oldestFirst = (a, b) => (a.createdAt === b.createdAt ? (a.id < b.id ? -1 : 1) : (a.createdAt < b.createdAt ? -1 : 1));
  function show() {
    if (!view.stopped()) view.executions([...turns.values()].sort(oldestFirst), truncated, following);
  }

  // read reads the listing; false when the view is to stop (no such conversation, no listing).
  async function read() {
    reading = reading || [];
    try {
      const result = await executions();
      if (view.stopped()) return false;
      const before = turns;
      turns = new Map(result.all.map((x) => [x.id, before.get(x.id)?.liveText && !TERMINAL.has(x.state) ? { ...x, liveText: before.get(x.id).liveText } : x]));
      truncated = result.truncated;
      const buffered = reading;
      reading = null;
      for (const ev of buffered) onEvent(ev, false);
      show();
      return true;
    } catch (err) {
      reading = null;
      if (view.stopped()) return false;
      return view.executionsError(err) ? undefined : false;
    }
  }

  function onEvent(ev, draw = true) {
    if (ev.type === CONVERSATION_DELETED) {
      // Erased (here or elsewhere): its stream ends, and nothing of it is to be shown.
      stream?.close();
      if (!view.stopped()) view.deleted();
      return;
    }
    if (reading) { reading.push(ev); return; }
    const waiting = fetching.get(ev.executionId);
    if (waiting) { waiting.push(ev); return; }
    if ((lastSeq.get(ev.executionId) ?? 0) >= ev.sequence) return;
    lastSeq.set(ev.executionId, ev.sequence);
    const x = turns.get(ev.executionId);
    if (!x) {
      // A turn this page has not seen (started elsewhere): its snapshot, once.
      fetching.set(ev.executionId, [ev]);
      lastSeq.delete(ev.executionId);
      get(`/executions/${enc(ev.executionId)}`).then((snap) => {
        const events = fetching.get(ev.executionId) || [];
        fetching.delete(ev.executionId);
        if (view.stopped()) return;
        if (!turns.has(snap.id)) turns.set(snap.id, snap);
        for (const e of events) onEvent(e, false);
        show();
      }, () => { fetching.delete(ev.executionId); });
      return;
    }
    let y = applyEvent(x, ev);
    // The reply as it is written: the text deltas of a turn that has not ended.
    if (ev.type === 'output.text.delta' && !TERMINAL.has(y.state) && typeof ev.data?.text === 'string') {
      y = { ...y, liveText: (y.liveText ?? '') + ev.data.text };
    }
    if (y === x) return;
    turns.set(y.id, y);
    if (draw) show();
  }

  // start reads the listing and follows the stream; in the fallback, again every FALLBACK_MS.
  async function start() {
    clearTimeout(timer);
    const ok = await read();
    if (ok === false || view.stopped()) return;
    if (ok === undefined) { timer = setTimeout(start, FALLBACK_MS); return; }
    if (stream) return;
    stream = follow(`/conversations/${enc(id)}/events`, '', {
      types: [...EVENT_TYPES, CONVERSATION_DELETED],
      onEvent,
      onGap: () => { read(); }, // events were missed: the listing once more, then on
      onLive: () => { following = true; show(); },
      onLost: () => { following = false; view.lost(); },
      onRefused: () => {
        stream.close(); stream = null; following = false; show();
        timer = setTimeout(start, FALLBACK_MS);
      },
    });
  }

  start();
  return {
    refresh: () => { if (!following) start(); },
    add(x) {
      if (!turns.has(x.id) && !fetching.has(x.id)) { turns.set(x.id, x); show(); }
    },
    stop: () => { clearTimeout(timer); if (stream) stream.close(); },
  };
}

// turnElement is one execution as a pair of messages: what was asked, and what came back (with
// the panel that answers its question while it waits for one).
function turnElement(x, panel) {
  const waiting = x.state === 'awaiting_approval' || x.state === 'awaiting_input';
  const live = h('a', { href: `#/executions/${enc(x.id)}` }, 'watch it live');
  let reply;
  if (x.state === 'succeeded') {
    reply = h('div', { class: 'msg reply ok' }, x.finalOutput || '(no text)');
  } else if (x.state === 'failed') {
    reply = h('div', { class: 'msg reply error' }, `Failed: ${x.error ? `${x.error.code}: ${x.error.message}` : 'no error given'}`);
  } else if (x.state === 'cancelled') {
    reply = h('div', { class: 'msg reply muted' }, ...cancelledText(x));
  } else if (waiting) {
    const what = x.state === 'awaiting_input' ? 'input' : 'approval';
    reply = x.pendingAction
      ? h('div', { class: 'msg reply muted' }, `Waiting for ${what}: answer it below, or on `, h('a', { href: `#/executions/${enc(x.id)}` }, 'its page'), '.')
      : h('div', { class: 'msg reply muted' }, `Waiting for ${what}: `, h('a', { href: `#/executions/${enc(x.id)}` }, 'answer it'));
  } else if (x.state === 'queued' && x.waitingFor?.length) {
    // The busy policy holds it until the turns it names have ended (enqueue, interrupt).
    reply = h('div', { class: 'msg reply muted queued', 'data-waiting-for': x.waitingFor.join(' ') }, 'Queued: waits for ',
      x.waitingFor.map((w, i) => [i ? ', ' : '', h('a', { class: 'mono', href: `#/executions/${enc(w)}` }, w)]), ' to end.');
  } else if (x.liveText) {
    // Being written: the text so far, as it arrives on the conversation's stream.
    reply = h('div', { class: 'msg reply live', 'data-live': 'true' }, x.liveText);
  } else {
    reply = h('div', { class: 'msg reply muted' }, `${x.state.replace('_', ' ')}… `, live);
  }
  if (waiting && x.pendingAction) {
    if (panel.pendingId() !== x.pendingAction.id) panel.show(x.pendingAction);
  } else if (panel.pendingId()) {
    panel.show(null);
  }
  return h('li', { class: 'turn', 'data-id': x.id, 'data-state': x.state },
    h('p', { class: 'turn-head' }, h('time', { datetime: x.createdAt }, when(x.createdAt)), ' · ', x.providerId, ' · ',
      stateBadge(x.state), ' · ', h('a', { href: `#/executions/${enc(x.id)}`, class: 'mono' }, x.id)),
    h('div', { class: 'msg input' }, x.input || '(empty input)'),
    reply,
    panel.box,
    panel.result);
}
