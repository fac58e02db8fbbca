// A pending action — an approval or input request — and the controls that answer it, shared by
// the execution view and the conversation view (a turn waiting for an answer is answered in its
// transcript). An approval gets Approve and Deny ({"approved": true|false}), an input request a
// text field ({"value": "…"}), an action whose payload lists `options` (the ACP provider's
// permission options) one button per option ({"value": "<optionId>"}). Someone else answering
// first (ACTION_ALREADY_RESOLVED) or the execution ending meanwhile (ACTION_NOT_FOUND) is said in
// plain words.

import { post, ApiError, enc } from './api.js';
import { h, replace, when, errorText } from './dom.js';

// createActionPanel returns the panel of one execution's pending action: `box` shows the request
// and its controls (hidden while nothing is pending), `result` what became of the last answer.
// Every element's id starts with idPrefix (`action` in the execution view: #action,
// #action-approve, #action-deny, #action-input, #action-send, #action-result, …). show(action)
// shows an ActionRequest, or hides the box for null; onSettled runs after each answer sent.
export function createActionPanel(executionId, { idPrefix = 'action', onSettled = () => {} } = {}) {
  const id = (suffix) => (suffix ? `${idPrefix}-${suffix}` : idPrefix);
  const box = h('section', { id: id(), class: 'action', 'aria-labelledby': id('title'), hidden: true });
  const result = h('p', { id: id('result'), class: 'action-result', role: 'status', 'aria-live': 'polite' });
  let pending = null;

  function show(action) {
    pending = action || null;
    if (!pending) {
      box.hidden = true;
      box.replaceChildren();
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
        h('button', { type: 'button', id: id('approve'), class: 'primary', onclick: () => respond({ approved: true }, 'approved') }, 'Approve'),
        h('button', { type: 'button', id: id('deny'), class: 'danger', onclick: () => respond({ approved: false }, 'denied') }, 'Deny')));
    }
    if (a.kind === 'input') {
      const field = h('textarea', { id: id('input'), name: 'value', rows: 3 });
      controls.push(h('form', { class: 'answer', onsubmit: (e) => { e.preventDefault(); respond({ value: field.value }, 'answered'); } },
        h('label', { for: id('input') }, 'Your answer'), field,
        h('button', { type: 'submit', id: id('send'), class: 'primary' }, 'Send answer')));
    }
    const rest = Object.fromEntries(Object.entries(payload).filter(([k]) => k !== 'options'));
    replace(box,
      h('h3', { id: id('title') }, a.kind === 'approval' ? 'Approval needed: ' : 'Input needed: ', h('span', { id: id('name') }, a.title)),
      a.description ? h('p', { id: id('description') }, a.description) : null,
      Object.keys(rest).length ? h('pre', { class: 'json' }, JSON.stringify(rest, null, 2)) : null,
      controls,
      h('p', { class: 'hint' }, `Asked ${when(a.createdAt)} · action ${a.id}`));
    box.hidden = false;
  }

  async function respond(body, verb) {
    const a = pending;
    if (!a) return;
    for (const b of box.querySelectorAll('button, textarea')) b.disabled = true;
    result.className = 'action-result';
    result.textContent = 'Sending…';
    try {
      await post(`/executions/${enc(executionId)}/actions/${enc(a.id)}:respond`, body);
      // Not the state the answer returned: that is stale a moment later (the views show it live).
      result.textContent = `You ${verb} “${a.title}” at ${new Date().toLocaleTimeString()}.`;
      if (pending && pending.id === a.id) show(null);
    } catch (err) {
      result.className = 'action-result error';
      if (err instanceof ApiError && err.code === 'ACTION_ALREADY_RESOLVED') {
        result.textContent = `Someone else answered “${a.title}” first (ACTION_ALREADY_RESOLVED). Your answer was not applied.`;
        if (pending && pending.id === a.id) show(null);
      } else if (err instanceof ApiError && err.code === 'ACTION_NOT_FOUND') {
        result.textContent = `“${a.title}” is no longer waiting for an answer (ACTION_NOT_FOUND): the execution was cancelled or failed.`;
        if (pending && pending.id === a.id) show(null);
      } else {
        result.textContent = `The answer was not accepted: ${errorText(err)}`;
        for (const b of box.querySelectorAll('button, textarea')) b.disabled = false;
      }
    }
    onSettled();
  }

  return { box, result, show, pendingId: () => (pending ? pending.id : null) };
}
