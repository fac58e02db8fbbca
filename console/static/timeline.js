// An execution's timeline: its events on one time axis, as rows of a Gantt chart. A span row
// (queued, running, writing text, waiting for an action) shows when it began and how long it took;
// a point row (an action answered, an artifact, the end) shows when it happened. While the run is
// live the open spans grow with the clock, so "waiting for approval" counts up as a person looks.
//
// The rows are computed from the events alone (phases()), the same events the page lists, so the
// timeline needs nothing the protocol does not stream. Times are the server's (millisecond
// precision); "now" for an open span is the browser's clock, never earlier than the last event.

import { h, replace } from './dom.js';

const TERMINAL_EVENTS = { 'run.completed': 'Succeeded', 'run.failed': 'Failed', 'run.cancelled': 'Cancelled' };

// phases turns events (in sequence order) into timeline rows:
//   { kind, label, start, end, open }  with times in ms since the epoch; end === start for a point.
// kind is one of queued, running, text, waiting, responded, artifact, end. A row of an event
// that names who caused it (the server's `identity` extension: who answered, who cancelled)
// also has actor, and says it in its label.
export function phases(events, now) {
  const rows = [];
  const open = {}; // kind -> the row still open
  const begin = (kind, label, t) => { const row = { kind, label, start: t, end: t, open: true }; rows.push(row); open[kind] = row; return row; };
  const finish = (kind, t) => { const row = open[kind]; if (row) { row.end = t; row.open = false; delete open[kind]; } };
  const point = (kind, label, t, actor) => rows.push({
    kind, label: actor ? `${label} by ${actor}` : label, start: t, end: t, open: false, actor,
  });

  for (const ev of events) {
    const t = Date.parse(ev.time);
    if (Number.isNaN(t)) continue;
    const data = ev.data || {};
    switch (ev.type) {
      case 'run.queued': begin('queued', 'Queued', t); break;
      case 'run.started': finish('queued', t); begin('running', 'Running', t); break;
      case 'output.text.delta': if (!open.text) begin('text', 'Writing text', t); break;
      case 'output.text.done': if (!open.text) begin('text', 'Writing text', t); finish('text', t); break;
      case 'action.required':
        finish('waiting', t); // one action waits at a time; never leave an earlier one open
        begin('waiting', `Waiting for ${data.kind === 'input' ? 'input' : 'approval'}: ${data.title || data.id}`, t);
        break;
      case 'action.responded':
        finish('waiting', t);
        point('responded', data.approved === true ? 'Approved' : data.approved === false ? 'Denied' : 'Answered', t, actorOf(data));
        break;
      case 'artifact.created': point('artifact', `Artifact ${data.name || data.id}`, t); break;
      default:
        if (TERMINAL_EVENTS[ev.type]) {
          for (const kind of Object.keys(open)) finish(kind, t);
          point('end', TERMINAL_EVENTS[ev.type], t, actorOf(data));
        }
    }
  }
  const last = rows.reduce((m, r) => Math.max(m, r.end), 0);
  const until = Math.max(now, last);
  for (const row of rows) if (row.open) row.end = until;
  return rows;
}

// actorOf is who caused an event, as its data names them (`actor.id`), or undefined.
export function actorOf(data) {
  const id = data && data.actor && data.actor.id;
  return typeof id === 'string' && id !== '' ? id : undefined;
}

// duration writes milliseconds the way a person reads them: 85 ms, 2.4 s, 3 min 05 s.
export function duration(ms) {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
  const min = Math.floor(ms / 60000);
  const s = Math.floor((ms % 60000) / 1000);
  if (min < 60) return `${min} min ${String(s).padStart(2, '0')} s`;
  return `${Math.floor(min / 60)} h ${String(min % 60).padStart(2, '0')} min`;
}

// createTimeline returns the section to place in the page and update(events, live) to redraw it.
export function createTimeline() {
  const list = h('ol', { id: 'timeline', class: 'timeline' });
  const total = h('p', { id: 'timeline-total', class: 'hint' });
  const section = h('section', { 'aria-labelledby': 'timeline-title', id: 'timeline-section' },
    h('h3', { id: 'timeline-title' }, 'Timeline'), total, list);

  function update(events, live) {
    const rows = phases(events, Date.now());
    if (!rows.length) { replace(list); total.textContent = 'No events yet.'; return; }
    const t0 = rows[0].start;
    const span = Math.max(1, Math.max(...rows.map((r) => r.end)) - t0);
    replace(list, rows.map((r) => {
      const ms = r.end - r.start;
      const bar = h('span', { class: `bar bar-${r.kind}${r.open ? ' open' : ''}` });
      // Positions are set through the CSSOM, which the CSP's style-src 'self' allows (a style
      // attribute would be refused).
      bar.style.left = `${((r.start - t0) / span) * 100}%`;
      bar.style.width = r.end > r.start ? `${(ms / span) * 100}%` : '0';
      const isSpan = r.end > r.start || r.open;
      const attrs = { 'data-phase': r.kind, 'data-ms': String(ms), 'data-at': String(r.start - t0), 'data-open': String(r.open) };
      if (r.actor) attrs['data-actor'] = r.actor;
      return h('li', attrs,
        h('span', { class: 'label' }, r.label),
        h('span', { class: 'when' }, `+${duration(r.start - t0)}`),
        h('span', { class: 'took' }, isSpan ? `${r.open ? 'for ' : 'took '}${duration(ms)}${r.open ? ' so far' : ''}` : ''),
        h('span', { class: 'track', 'aria-hidden': 'true' }, bar));
    }));
    total.textContent = live
      ? `Live: ${duration(span)} since it was queued.`
      : `${duration(span)} from queued to the end.`;
  }

  return { section, update };
}
