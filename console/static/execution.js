// One execution, live. Its events come over the protocol's SSE stream through the browser's
// EventSource, which reconnects by itself and sends Last-Event-ID (the last sequence it saw) so
// the server resumes after it; events are also de-duplicated by sequence here, because delivery is
// at least once across reconnects. The stream ends after the terminal event; the view then closes
// it, or EventSource would reconnect to a finished execution forever.
//
// The timeline (timeline.js) draws the same events on a time axis; while the run is live a
// one-second tick lets its open spans (queued, waiting for an answer) grow with the clock.

import { get, post, API, ApiError, TERMINAL, enc } from './api.js';
import { h, replace, stateBadge, when, errorText, safeHref, cancelledText } from './dom.js';
import { createActionPanel } from './action.js';
import { createTimeline, actorOf } from './timeline.js';
// The event types, and which end an execution, come from harness.yaml (facts.gen.js).
import { EVENT_TYPES, TERMINAL_EVENT_TYPES as TERMINAL_TYPES } from './facts.gen.js';

const TICK_MS = 1000;

export function renderExecution(main, id) {
  const summary = h('dl', { class: 'summary', id: 'exec-summary' });
  const result = h('div', { id: 'exec-result', 'aria-live': 'polite' });
  const streamStatus = h('p', { class: 'status', id: 'stream-status', role: 'status' }, 'Connecting…');
  // The pending action and its answer (action.js); after an answer the snapshot is read again.
  const action = createActionPanel(id, { onSettled: () => refresh() });
  const output = h('pre', { id: 'output', class: 'output', tabindex: '0', 'aria-label': 'Output text' });
  const artifacts = h('ul', { id: 'artifacts', class: 'artifacts' });
  const events = h('ol', { id: 'events', class: 'events' });
  const eventCount = h('span', { id: 'event-count' }, '0');

  const reason = h('input', { id: 'cancel-reason', name: 'reason', maxlength: 500, autocomplete: 'off' });
  const cancelButton = h('button', { type: 'submit', id: 'cancel', class: 'danger' }, 'Cancel execution');
  const cancelResult = h('p', { id: 'cancel-result', role: 'status', 'aria-live': 'polite' });
  const cancelForm = h('form', { id: 'cancel-form', class: 'cancel', onsubmit: (e) => { e.preventDefault(); cancel(); } },
    h('label', { for: 'cancel-reason' }, 'Reason (optional)'), reason, cancelButton);

  const cancelSection = h('section', { 'aria-labelledby': 'cancel-title', id: 'cancel-section' },
    h('h3', { id: 'cancel-title' }, 'Cancel'), cancelForm, cancelResult);

  const timeline = createTimeline();
  // Everything about an execution that exists: hidden until the execution was read, so an unknown
  // id shows only the error, not empty Output, Artifacts and "Events (0)".
  const body = h('div', { id: 'exec-body', hidden: true },
    summary,
    timeline.section,
    h('section', { 'aria-labelledby': 'output-title' }, h('h3', { id: 'output-title' }, 'Output'), output),
    cancelSection,
    h('section', { 'aria-labelledby': 'artifacts-title' }, h('h3', { id: 'artifacts-title' }, 'Artifacts'), artifacts),
    h('section', { 'aria-labelledby': 'events-title' },
      h('details', { open: true }, h('summary', { id: 'events-title' }, 'Events (', eventCount, ')'), events)));

  main.append(
    h('h2', {}, 'Execution ', h('span', { class: 'mono', id: 'exec-id' }, id)),
    streamStatus,
    // What waits for the person comes first, so that on a phone it is on the first screen.
    action.box,
    action.result,
    result,
    body);

  let exec = null;
  let lastSeq = 0;
  let text = '';
  const knownArtifacts = new Map();
  let source = null;
  let reconnects = 0; // shown as data-reconnects on the status line
  let left = false;
  let ended = false; // the terminal event arrived
  const seen = []; // every event, in order, for the timeline
  let ticker = null;

  // Snapshot refreshes are serialised: one in flight, and one more if events arrived meanwhile,
  // so the last answer shown is never older than the last event seen.
  let refreshing = null;
  let again = false;
  function refresh() {
    if (refreshing) { again = true; return refreshing; }
    refreshing = (async () => {
      do {
        again = false;
        try {
          exec = await get(`/executions/${enc(id)}`);
          if (!left) renderSummary();
        } catch (err) {
          if (!left) replace(result, h('p', { class: 'error' }, `Could not read the execution: ${errorText(err)}`));
        }
      } while (again && !left);
      refreshing = null;
    })();
    return refreshing;
  }

  function renderSummary() {
    const rows = [
      ['State', stateBadge(exec.state, 'exec-state')],
      ['Provider', exec.providerId],
      ['Conversation', h('a', { class: 'mono', id: 'exec-conversation', href: `#/conversations/${enc(exec.conversationId)}` }, exec.conversationId)],
      ['Created', when(exec.createdAt)],
      ['Started', when(exec.startedAt) || '—'],
      ['Ended', when(exec.endedAt) || '—'],
      ['Input', h('span', { class: 'prewrap' }, exec.input || '(empty)')],
      ['Required capabilities', exec.requiredCapabilities.length ? exec.requiredCapabilities.join(', ') : 'none'],
      ['Config', h('pre', { class: 'json' }, JSON.stringify(exec.effectiveConfig, null, 2))],
    ];
    replace(summary, rows.map(([k, v]) => [h('dt', {}, k), h('dd', {}, v)]));
    const terminal = TERMINAL.has(exec.state);
    if (exec.state === 'succeeded') {
      replace(result, h('p', { class: 'final ok', id: 'final' }, 'Succeeded. Final output: ',
        h('q', { id: 'final-output' }, exec.finalOutput ?? '')));
    } else if (exec.state === 'failed') {
      replace(result, h('p', { class: 'final error', id: 'final' }, `Failed: ${exec.error ? `${exec.error.code}: ${exec.error.message}` : 'no error given'}`));
    } else if (exec.state === 'cancelled') {
      replace(result, h('p', { class: 'final', id: 'final' }, ...cancelledText(exec)));
    } else {
      replace(result);
    }
    cancelForm.hidden = terminal;
    cancelSection.hidden = terminal && !cancelResult.textContent; // kept while it shows a cancel's result
    if (terminal) { action.show(null); renderArtifacts(); }
  }

  async function cancel() {
    cancelButton.disabled = true;
    cancelResult.className = '';
    cancelResult.textContent = 'Cancelling… (waits for the provider to clean up)';
    const r = reason.value.trim();
    try {
      const after = await post(`/executions/${enc(id)}:cancel`, r ? { reason: r } : {});
      cancelResult.textContent = after.state === 'cancelled'
        ? `Cancelled${r ? ` (reason: ${r})` : ''}. Final state: cancelled.`
        : `The execution had already ended (${after.state}); nothing was cancelled.`;
    } catch (err) {
      cancelResult.className = 'error';
      cancelResult.textContent = `Cancel failed: ${errorText(err)}`;
    } finally {
      cancelButton.disabled = false;
    }
    refresh();
  }

  async function loadArtifacts() {
    try {
      const list = await get(`/executions/${enc(id)}/artifacts`);
      for (const a of list.artifacts) knownArtifacts.set(a.id, a);
      renderArtifacts();
    } catch (err) {
      replace(artifacts, h('li', { class: 'error' }, `Could not list artifacts: ${errorText(err)}`));
    }
  }

  function renderArtifacts() {
    if (!knownArtifacts.size) {
      const over = ended || (exec && TERMINAL.has(exec.state));
      replace(artifacts, h('li', { class: 'hint', id: 'artifacts-none' }, over ? 'None.' : 'None yet.'));
      return;
    }
    replace(artifacts, [...knownArtifacts.values()].map((a) => {
      const href = a.uri ? safeHref(a.uri) : null;
      return h('li', {}, href ? h('a', { href, rel: 'noopener noreferrer' }, a.name) : h('strong', {}, a.name),
        ` · ${a.mediaType}`, a.uri && !href ? ` · ${a.uri}` : '', ` · ${when(a.createdAt)}`);
    }));
  }

  function onEvent(ev) {
    if (left || ev.sequence <= lastSeq) return; // a replay after a reconnect
    lastSeq = ev.sequence;
    seen.push(ev);
    const data = ev.data || {};
    let summaryText = JSON.stringify(data);
    if (summaryText.length > 160) summaryText = `${summaryText.slice(0, 160)}…`;
    // Who answered or cancelled, when the server records it (its `identity` setting).
    const actor = actorOf(data);
    events.append(h('li', { 'data-type': ev.type },
      h('span', { class: 'seq' }, `#${ev.sequence}`), ' ', h('code', {}, ev.type), ' ',
      actor ? [h('span', { class: 'actor' }, `by ${actor}`), ' '] : null,
      h('time', { datetime: ev.time }, when(ev.time)), ' ', h('span', { class: 'data' }, summaryText)));
    eventCount.textContent = String(lastSeq);
    if (TERMINAL_TYPES.has(ev.type)) ended = true;
    drawTimeline();

    switch (ev.type) {
      case 'output.text.delta':
        text += typeof data.text === 'string' ? data.text : '';
        output.textContent = text;
        return; // no state change
      case 'output.text.done':
        if (typeof data.text === 'string') { text = data.text; output.textContent = text; }
        return;
      case 'action.required':
        action.show(data);
        break;
      case 'action.responded':
        if (action.pendingId() === data.actionId) action.show(null);
        break;
      case 'artifact.created':
        knownArtifacts.set(data.id, data);
        renderArtifacts();
        return;
      default:
        if (TERMINAL_TYPES.has(ev.type)) {
          action.show(null);
          source.close();
          clearInterval(ticker);
          streamStatus.textContent = `Stream ended: ${ev.type}. ${lastSeq} events.`;
          loadArtifacts();
        }
    }
    refresh();
  }

  // drawTimeline redraws the timeline; a burst of text deltas (or a replay) is drawn once.
  let drawPending = false;
  function drawTimeline() {
    if (drawPending) return;
    drawPending = true;
    setTimeout(() => { drawPending = false; if (!left) timeline.update(seen, !ended); }, 30);
  }

  function openStream() {
    source = new EventSource(`${API}/executions/${enc(id)}/events`);
    const handle = (e) => {
      try { onEvent(JSON.parse(e.data)); } catch (err) { console.error('bad event', err, e.data); }
    };
    for (const type of EVENT_TYPES) source.addEventListener(type, handle);
    // EventSource delivers a named event only to listeners of its name: a type outside the
    // protocol's eleven would not reach this view (and the server sends none).
    source.onopen = () => { streamStatus.textContent = 'Live: events appear as they happen.'; };
    source.onerror = () => {
      if (left) return;
      if (source.readyState === EventSource.CLOSED) {
        streamStatus.textContent = 'The event stream was refused by the server. Reload to try again.';
      } else {
        reconnects++;
        streamStatus.dataset.reconnects = String(reconnects);
        streamStatus.textContent = `Connection lost; reconnecting and resuming after event ${lastSeq}…`;
      }
    };
  }

  (async () => {
    try {
      exec = await get(`/executions/${enc(id)}`);
    } catch (err) {
      streamStatus.textContent = '';
      const msg = err instanceof ApiError && err.status === 404
        ? `No execution ${id} here (${err.code}).` : `Could not read the execution: ${errorText(err)}`;
      replace(result, h('p', { class: 'error', id: 'exec-error' }, msg));
      cancelSection.hidden = true;
      return;
    }
    if (left) return;
    body.hidden = false;
    renderSummary();
    renderArtifacts();
    loadArtifacts();
    openStream();
    if (!TERMINAL.has(exec.state)) ticker = setInterval(() => { if (!ended) drawTimeline(); }, TICK_MS);
  })();

  return () => {
    left = true;
    clearInterval(ticker);
    if (source) source.close();
  };
}
