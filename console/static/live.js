// Following the server's streams (docs/protocol.md §15.8) instead of polling a listing: the
// executions list and the overview follow the tenant's stream with the lifecycle filter
// (GET /v1/events?lifecycle=true: starts, questions, answers, ends; no text), the conversation view
// its conversation's stream (GET /v1/conversations/{id}/events). One EventSource each, whatever
// the number of live executions: a browser on HTTP/1.1 has six connections per origin.
//
// What a view does with it: read its listing once, then apply each event to what it shows
// (applyEvent), reading one execution's snapshot only for an execution it has not seen (the
// events do not carry an input). The browser reconnects by itself and sends Last-Event-ID, so a
// cut resumes exactly. A cursor older than the server keeps gets a first `stream.gap` message
// saying where the stream resumes: the view then reads its listing once more and goes on. Only
// when a stream cannot be opened at all (a server without the streams extension, or one that
// refuses it) does a view fall back to reading its listing every FALLBACK_MS, and says so.

import { API, get, ApiError } from './api.js';
import { EVENT_TYPES, TERMINAL_STATES } from './facts.gen.js';

export const FALLBACK_MS = 15000;

// The message a stream carries where an erased conversation's entries were (DELETE
// /v1/conversations/{id}, an extension): {conversationId, time, executions}, no executionId. The
// tenant's streams carry it whatever their filter; a conversation's stream ends after it.
export const CONVERSATION_DELETED = 'conversation.deleted';

// What `lifecycle=true` lets through: run.* and action.*.
export const LIFECYCLE_TYPES = EVENT_TYPES.filter((t) => t.startsWith('run.') || t.startsWith('action.'));

// stateAfter is the state an execution is in after a lifecycle event (docs/protocol.md §4.2), or
// null for an event that does not change it (text, artifacts, provider events).
export function stateAfter(ev) {
  switch (ev.type) {
    case 'run.queued': return 'queued';
    case 'run.started': case 'action.responded': return 'running';
    case 'action.required': return ev.data?.kind === 'input' ? 'awaiting_input' : 'awaiting_approval';
    case 'run.completed': return 'succeeded';
    case 'run.failed': return 'failed';
    case 'run.cancelled': return 'cancelled';
    default: return null;
  }
}

// applyEvent returns the listed execution x as it is after ev (x itself when ev changes nothing).
// A terminal execution never changes, and an event older than x's last change is already in it:
// a snapshot read after the event was committed, or a conversation's stream replayed from its
// beginning, must not put an execution back in an earlier state.
export function applyEvent(x, ev) {
  const state = stateAfter(ev);
  if (!state || TERMINAL_STATES.has(x.state) || Date.parse(ev.time) < Date.parse(x.updatedAt)) return x;
  const y = { ...x, state, updatedAt: ev.time };
  if (state !== 'queued') delete y.waitingFor; // it runs: what it waited for has ended
  if (ev.type === 'action.required') y.pendingAction = ev.data;
  else delete y.pendingAction;
  if (TERMINAL_STATES.has(state)) y.endedAt = ev.time;
  if (ev.type === 'run.completed') y.finalOutput = ev.data?.finalOutput ?? '';
  if (ev.type === 'run.failed') y.error = { code: ev.data?.code, message: ev.data?.message };
  if (ev.type === 'run.cancelled' && typeof ev.data?.reason === 'string') y.cancelReason = ev.data.reason;
  return y;
}

// cursorOfNow asks a tenant stream (with these filters) for its cursor of now: a JSON request to
// GET /v1/events without a cursor answers no events and that cursor. Taken before the listing is
// read, it makes listing-then-stream gapless.
export async function cursorOfNow(params) {
  const page = await get(`/events?${params}`);
  return page.nextCursor;
}

// noStreams reports whether an error means this server has no such stream (not in this build).
export function noStreams(err) {
  return err instanceof ApiError && (err.status === 404 || err.status === 405) && !/Conversation/.test(err.message || '');
}

// follow opens one EventSource on path?params and calls: onEvent(event) for each event of types;
// onGap(gap) for a `stream.gap` (the cursor had expired; the stream goes on from gap.resumeAfter);
// onLive() when (re)connected; onLost() when the connection dropped and the browser reconnects;
// onRefused(everOpened) when the server refused the stream, which EventSource does not retry.
export function follow(path, params, { types, onEvent, onGap, onLive, onLost, onRefused }) {
  const source = new EventSource(`${API}${path}${params && String(params) ? `?${params}` : ''}`);
  let opened = false;
  const handle = (e) => {
    let ev;
    try { ev = JSON.parse(e.data); } catch (err) { console.error('bad event', err, e.data); return; }
    onEvent(ev);
  };
  for (const type of types) source.addEventListener(type, handle);
  source.addEventListener('stream.gap', (e) => {
    let gap = {};
    try { gap = JSON.parse(e.data); } catch { /* the gap is said anyway */ }
    onGap(gap);
  });
  source.onopen = () => { opened = true; onLive(); };
  source.onerror = () => {
    if (source.readyState === EventSource.CLOSED) onRefused(opened);
    else onLost();
  };
  return { close: () => source.close() };
}
