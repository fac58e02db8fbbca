// The standing rules of this tenant (GET/POST /v1/action-rules, an extension: docs/protocol.md,
// "Standing rules"), shown under the inbox: each rule with what it matches, what it answers,
// where it came from and whether it is still in force; a rule made through the API or by an
// *_always answer can be revoked here, and a new one created. A revoked rule stays listed so
// that the answers it gave (their actor names it) stay explained. Rules of the server's
// configuration are shown but cannot be revoked here (the server answers 409).

import { get, post, ApiError, enc } from './api.js';
import { h, replace, when, errorText } from './dom.js';

const POLL_MS = 5000;

// renderRules draws the rules into section; it returns leave (stop polling) and refresh
// (reload now, e.g. after an answer that may have left a rule).
export function renderRules(section) {
  const body = h('tbody', { id: 'rules-body' });
  const table = h('table', { id: 'rules-table', class: 'executions' },
    h('caption', { class: 'visually-hidden' }, 'Standing rules, oldest first'),
    h('thead', {}, h('tr', {},
      h('th', { scope: 'col' }, 'Rule'), h('th', { scope: 'col' }, 'Matches'), h('th', { scope: 'col' }, 'Answers'),
      h('th', { scope: 'col' }, 'Made'), h('th', { scope: 'col' }, 'In force'))),
    body);
  const status = h('p', { class: 'status', id: 'rules-status' });
  const result = h('p', { id: 'rules-result', role: 'status', 'aria-live': 'polite' });
  section.append(h('h2', { id: 'rules-title' }, 'Standing rules'),
    h('p', { class: 'hint' }, 'A rule answers matching approvals as soon as they are asked; each answer names the rule as its actor.'),
    result, table, status, ...createForm(result, () => load()));

  let timer = null;
  let stopped = false;
  let latest = 0;

  async function load() {
    clearTimeout(timer);
    const mine = ++latest;
    try {
      const list = await get('/action-rules');
      if (stopped || mine !== latest) return;
      replace(body, list.rules.length
        ? list.rules.map((rule) => ruleRow(rule, result, () => load()))
        : h('tr', {}, h('td', { colspan: 5 }, 'No standing rules.')));
      status.textContent = `${list.rules.length} ${list.rules.length === 1 ? 'rule' : 'rules'} · updated ${new Date().toLocaleTimeString()}`;
    } catch (err) {
      if (stopped || mine !== latest) return;
      if (err instanceof ApiError && (err.status === 404 || err.status === 405)) {
        replace(section, h('p', { class: 'notice' }, 'This server has no standing rules (/v1/action-rules is not in this build).'));
        return;
      }
      status.textContent = `Could not load the rules: ${errorText(err)} · retrying`;
    }
    timer = setTimeout(load, POLL_MS);
  }

  load();
  return { leave: () => { stopped = true; clearTimeout(timer); }, refresh: () => load() };
}

function describeMatch(m) {
  const parts = [];
  if (m.toolKind) parts.push(`tool kind ${m.toolKind}`);
  if (m.title) parts.push(`title “${m.title}”`);
  if (m.providerId) parts.push(`provider ${m.providerId}`);
  return parts.join(' · ');
}

function describeActor(actor) {
  if (!actor) return '';
  return actor.kind ? `${actor.kind} ${actor.id}` : actor.id;
}

function ruleRow(rule, result, reload) {
  const active = !rule.revokedAt;
  const made = { api: 'through the API', answer: `by the answer to ${rule.actionId ?? 'an action'}`, config: 'by the server configuration' }[rule.source] ?? rule.source;
  let control = null;
  if (active && rule.source !== 'config') {
    control = h('button', { type: 'button', class: 'danger', 'data-revoke': rule.id, onclick: async (e) => {
      e.target.disabled = true;
      try {
        await post(`/action-rules/${enc(rule.id)}:revoke`);
        result.className = '';
        result.textContent = `Rule ${rule.id} revoked.`;
      } catch (err) {
        result.className = 'error';
        result.textContent = `Could not revoke ${rule.id}: ${errorText(err)}`;
        e.target.disabled = false;
      }
      reload();
    } }, 'Revoke');
  }
  return h('tr', { 'data-id': rule.id, 'data-active': String(active) },
    h('td', { 'data-label': 'Rule' }, h('span', { class: 'mono' }, rule.id),
      h('p', { class: 'hint' }, rule.scope === 'conversation' ? `conversation ${rule.conversationId}` : 'the whole tenant')),
    h('td', { 'data-label': 'Matches' }, describeMatch(rule.match)),
    h('td', { 'data-label': 'Answers' }, h('strong', { class: 'decision' }, rule.decision),
      rule.message ? h('p', { class: 'hint' }, rule.message) : null),
    h('td', { 'data-label': 'Made' }, h('time', { datetime: rule.createdAt }, when(rule.createdAt)),
      h('p', { class: 'hint' }, made, rule.createdBy ? `, ${describeActor(rule.createdBy)}` : '')),
    h('td', { 'data-label': 'In force' }, active ? 'yes' : h('span', {}, 'revoked ', h('time', { datetime: rule.revokedAt }, when(rule.revokedAt)),
      rule.revokedBy ? ` by ${describeActor(rule.revokedBy)}` : ''), control));
}

// createForm makes a rule from its fields; empty fields are left out (the server says what a
// rule must name, with a pointer, when too little is given).
function createForm(result, reload) {
  // Each label wraps its control, as the list's filters do (form.filters in console.css).
  const field = (name, label, hint) => {
    const input = h('input', { type: 'text', id: `rule-${name}`, name });
    return [input, h('label', {}, h('span', {}, label, hint ? h('span', { class: 'hint' }, ` ${hint}`) : null), input)];
  };
  const [conversation, conversationLabel] = field('conversation', 'Conversation', '(empty: the whole tenant)');
  const [provider, providerLabel] = field('provider', 'Provider', '(empty: any)');
  const [toolKind, toolKindLabel] = field('toolKind', 'Tool kind', '(read, edit, execute…)');
  const [title, titleLabel] = field('title', 'Title', '(* is any run of characters)');
  const decision = h('select', { id: 'rule-decision', name: 'decision' },
    h('option', { value: 'approve' }, 'approve'), h('option', { value: 'reject' }, 'reject'));
  const [message, messageLabel] = field('message', 'Message to the agent', '(optional)');
  const form = h('form', { id: 'rule-form', class: 'filters', onsubmit: async (e) => {
    e.preventDefault();
    const body = { match: {}, decision: decision.value };
    if (conversation.value.trim()) body.conversationId = conversation.value.trim();
    if (provider.value.trim()) body.match.providerId = provider.value.trim();
    if (toolKind.value.trim()) body.match.toolKind = toolKind.value.trim();
    if (title.value.trim()) body.match.title = title.value.trim();
    if (message.value.trim()) body.message = message.value.trim();
    try {
      const rule = await post('/action-rules', body);
      result.className = '';
      result.textContent = `Rule ${rule.id} created.`;
      form.reset();
    } catch (err) {
      const first = err.details && Array.isArray(err.details.errors) ? err.details.errors[0] : null;
      result.className = 'error';
      result.textContent = `Not created: ${errorText(err)}${first ? ` — ${first.pointer ?? first.parameter ?? ''} ${first.reason}` : ''}`;
    }
    reload();
  } },
  conversationLabel, providerLabel, toolKindLabel, titleLabel, h('label', {}, 'Answer', decision), messageLabel,
  h('button', { type: 'submit', class: 'primary', id: 'rule-create' }, 'Create rule'));
  return [h('h3', {}, 'New rule'), form];
}
