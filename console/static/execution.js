// One execution, live. Its events come over the protocol's SSE stream through the browser's
// EventSource, which reconnects by itself and sends Last-Event-ID (the last sequence it saw) so
// the server resumes after it; events are also de-duplicated by sequence here, because delivery is
// at least once across reconnects. The stream ends after the terminal event; the view then closes
// it, or EventSource would reconnect to a finished execution forever.
//
// The timeline (timeline.js) draws the same events on a time axis; while the run is live a
// one-second tick lets its open spans (queued, waiting for an answer) grow with the clock.

import { get, post, API, ApiError, TERMINAL, enc } from './api.js';
import { h, replace, stateBadge, when, errorText, safeHref } from './dom.js';
import { createTimeline, actorOf } from './timeline.js';
// The event types, and which end an execution, come from harness.yaml (facts.gen.js).
import { EVENT_TYPES, TERMINAL_EVENT_TYPES as TERMINAL_TYPES } from './facts.gen.js';

const TICK_MS = 1000;

export function renderExecution(main, id) {
  const summary = h('dl', { class: 'summary', id: 'exec-summary' });
  const result = h('div', { id: 'exec-result', 'aria-live': 'polite' });
  const streamStatus = h('p', { class: 'status', id: 'stream-status', role: 'status' }, 'Connecting…');
  const actionBox = h('section', { id: 'action', class: 'action', 'aria-labelledby': 'action-title', hidden: true });
  const actionResult = h('p', { id: 'action-result', role: 'status', 'aria-live': 'polite' });
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
    actionBox,
    actionResult,
    result,
    body);

  let exec = null;
  let lastSeq = 0;
  let text = '';
  let pending = null; // the ActionRequest awaiting an answer, from action.required
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
      replace(result, h('p', { class: 'final', id: 'final' }, 'Cancelled.'));
    } else {
      replace(result);
    }
    cancelForm.hidden = terminal;
    cancelSection.hidden = terminal && !cancelResult.textContent; // kept while it shows a cancel's result
    if (terminal) { pending = null; renderAction(); renderArtifacts(); }
  }

  function renderAction() {
    if (!pending) {
      actionBox.hidden = true;
      actionBox.replaceChildren();
      return;
    }
    const a = pending;
    const payload = a.payload || {};
    const options = Array.isArray(payload.options) ? payload.options.filter((o) => o && typeof o.optionId === 'string') : [];
    const controls = [];
    if (options.length) {
      controls.push(h('div', { class: 'buttons', role: 'group', 'aria-label': 'Options' },
        options.map((o) => h('button', { type: 'button', class: o.kind && o.kind.startsWith('reject') ? 'danger' : 'primary',
          'data-option': o.optionId, onclick: () => respond({ value: o.optionId }, `chose “${o.name || o.optionId}”`) },
        o.name || o.optionId))));
    } else if (a.kind === 'approval') {
      controls.push(h('div', { class: 'buttons' },
        h('button', { type: 'button', id: 'action-approve', class: 'primary', onclick: () => respond({ approved: true }, 'approved') }, 'Approve'),
        h('button', { type: 'button', id: 'action-deny', class: 'danger', onclick: () => respond({ approved: false }, 'denied') }, 'Deny')));
    }
    if (a.kind === 'input') {
      const field = h('textarea', { id: 'action-input', name: 'value', rows: 3 });
      controls.push(h('form', { class: 'answer', onsubmit: (e) => { e.preventDefault(); respond({ value: field.value }, 'answered'); } },
        h('label', { for: 'action-input' }, 'Your answer'), field,
        h('button', { type: 'submit', id: 'action-send', class: 'primary' }, 'Send answer')));
    }
    const rest = Object.fromEntries(Object.entries(payload).filter(([k]) => k !== 'options'));
    replace(actionBox,
      h('h3', { id: 'action-title' }, a.kind === 'approval' ? 'Approval needed: ' : 'Input needed: ', h('span', { id: 'action-name' }, a.title)),
      a.description ? h('p', { id: 'action-description' }, a.description) : null,
      Object.keys(rest).length ? h('pre', { class: 'json' }, JSON.stringify(rest, null, 2)) : null,
      controls,
      h('p', { class: 'hint' }, `Asked ${when(a.createdAt)} · action ${a.id}`));
    actionBox.hidden = false;
  }

  async function respond(body, verb) {
    const a = pending;
    if (!a) return;
    for (const b of actionBox.querySelectorAll('button, textarea')) b.disabled = true;
    actionResult.className = '';
    actionResult.textContent = 'Sending…';
    try {
      await post(`/executions/${enc(id)}/actions/${enc(a.id)}:respond`, body);
      // Not the state the answer returned: that is stale a moment later (the state above is live).
      actionResult.textContent = `You ${verb} “${a.title}” at ${new Date().toLocaleTimeString()}.`;
      if (pending && pending.id === a.id) { pending = null; renderAction(); }
    } catch (err) {
      actionResult.className = 'error';
      if (err instanceof ApiError && err.code === 'ACTION_ALREADY_RESOLVED') {
        actionResult.textContent = `Someone else answered “${a.title}” first (ACTION_ALREADY_RESOLVED). Your answer was not applied.`;
        if (pending && pending.id === a.id) { pending = null; renderAction(); }
      } else if (err instanceof ApiError && err.code === 'ACTION_NOT_FOUND') {
        actionResult.textContent = `“${a.title}” is no longer waiting for an answer (ACTION_NOT_FOUND): the execution was cancelled or failed.`;
        if (pending && pending.id === a.id) { pending = null; renderAction(); }
      } else {
        actionResult.textContent = `The answer was not accepted: ${errorText(err)}`;
        for (const b of actionBox.querySelectorAll('button, textarea')) b.disabled = false;
      }
    }
    refresh();
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
        pending = data;
        renderAction();
        break;
      case 'action.responded':
        if (pending && pending.id === data.actionId) { pending = null; renderAction(); }
        break;
      case 'artifact.created':
        knownArtifacts.set(data.id, data);
        renderArtifacts();
        return;
      default:
        if (TERMINAL_TYPES.has(ev.type)) {
          pending = null;
          renderAction();
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
