// Start an execution: pick a provider, read what its manifest says it supports, write the input
// and the provider's config as JSON, optionally require capabilities (the server's preflight then
// refuses a provider that lacks them with CAPABILITY_UNSUPPORTED). A new conversation is created
// unless an existing conversation id is given.

import { get, post, parseConfig, enc } from './api.js';
import { h, replace, errorText } from './dom.js';

const EXAMPLES = {
  mock: '{\n  "requireApproval": true\n}',
};

// params may carry conversation=<id> (from a conversation's "Continue" link): the form starts in it.
export function renderStart(main, params = new URLSearchParams()) {
  const provider = h('select', { id: 'provider', name: 'provider', required: true });
  const caps = h('div', { id: 'capabilities', class: 'capabilities' });
  const input = h('textarea', { id: 'input', name: 'input', rows: 3 }, 'hello runtime');
  const config = h('textarea', { id: 'config', name: 'config', rows: 8, spellcheck: 'false', class: 'mono',
    'aria-describedby': 'config-help config-error' }, '{}');
  const configError = h('p', { id: 'config-error', class: 'error', 'aria-live': 'polite' });
  const conversation = h('input', { id: 'conversation', name: 'conversation', autocomplete: 'off', placeholder: 'new conversation', spellcheck: 'false',
    value: params.get('conversation') || undefined });
  // A new conversation's busy policy (docs/protocol.md §15.7): what a later execution started in
  // it while this one runs does. The conversation view's message box shows it.
  const busyPolicy = h('select', { id: 'busy-policy', name: 'busyPolicy', 'aria-describedby': 'busy-policy-help' },
    h('option', { value: '' }, 'parallel (none set)'),
    ['enqueue', 'reject', 'interrupt'].map((p) => h('option', { value: p }, p)));
  const submit = h('button', { type: 'submit', id: 'start', class: 'primary' }, 'Start execution');
  const outcome = h('p', { id: 'start-result', role: 'status', 'aria-live': 'polite' });
  let manifests = [];

  const form = h('form', { id: 'start-form', class: 'start', onsubmit: (e) => { e.preventDefault(); start(); } },
    h('label', { for: 'provider' }, 'Provider'), provider,
    h('section', { 'aria-labelledby': 'caps-title' }, h('h3', { id: 'caps-title' }, 'Capabilities (from the provider manifest)'), caps),
    h('label', { for: 'input' }, 'Input'), input,
    h('label', { for: 'config' }, 'Config (JSON object)'), config,
    h('p', { id: 'config-help', class: 'hint' },
      'Passed to the provider as it is. The mock provider reads requireApproval, requestInput, delayMs, prefix and artifactName.'),
    configError,
    h('label', { for: 'conversation' }, 'Conversation id (optional)'), conversation,
    h('label', { for: 'busy-policy' }, 'Busy policy of a new conversation'), busyPolicy,
    h('p', { id: 'busy-policy-help', class: 'hint' },
      'What a later message in the conversation does while a turn is running: enqueue waits for it, reject refuses, interrupt cancels it, parallel runs beside. Used when no conversation id is given.'),
    submit, outcome);
  main.append(h('h2', {}, 'Start an execution'), form);

  config.addEventListener('input', () => checkConfig());
  provider.addEventListener('change', () => showCapabilities());

  function checkConfig() {
    try {
      const value = parseConfig(config.value);
      configError.textContent = '';
      config.removeAttribute('aria-invalid');
      return value;
    } catch (err) {
      configError.textContent = `Config is not valid: ${err.message}`;
      config.setAttribute('aria-invalid', 'true');
      return null;
    }
  }

  function showCapabilities() {
    const m = manifests.find((x) => x.id === provider.value);
    if (!m) { replace(caps); return; }
    const entries = Object.entries(m.capabilities || {}).sort(([a], [b]) => a.localeCompare(b));
    replace(caps,
      h('p', { class: 'hint' }, `${m.name} ${m.version} · topologies: ${(m.topologies || []).join(', ')}. Tick a capability to require it.`),
      entries.length ? h('table', { class: 'caps' },
        h('thead', {}, h('tr', {}, h('th', { scope: 'col' }, 'Require'), h('th', { scope: 'col' }, 'Capability'), h('th', { scope: 'col' }, 'Support'))),
        h('tbody', {}, entries.map(([name, level], i) => h('tr', {},
          h('td', {}, h('input', { type: 'checkbox', id: `cap-${i}`, value: name, name: 'capability' })),
          h('td', {}, h('label', { for: `cap-${i}`, class: 'mono' }, name)),
          h('td', {}, h('span', { class: `support support-${level}` }, level))))))
        : h('p', {}, 'The manifest lists no capabilities.'));
    if ((config.value.trim() === '{}' || config.value.trim() === '') && EXAMPLES[m.id]) {
      config.placeholder = EXAMPLES[m.id];
    }
  }

  async function start() {
    const cfg = checkConfig();
    if (!cfg) { config.focus(); return; }
    submit.disabled = true;
    outcome.className = '';
    outcome.textContent = 'Starting…';
    try {
      let conversationId = conversation.value.trim();
      if (!conversationId) conversationId = (await post('/conversations', busyPolicy.value ? { busyPolicy: busyPolicy.value } : {})).id;
      const required = [...caps.querySelectorAll('input[name=capability]:checked')].map((c) => c.value);
      const body = { conversationId, providerId: provider.value, input: input.value, config: cfg };
      if (required.length) body.requiredCapabilities = required;
      const exec = await post('/executions', body);
      location.hash = `#/executions/${enc(exec.id)}`;
    } catch (err) {
      outcome.className = 'error';
      outcome.textContent = `Not started: ${errorText(err)}`;
      submit.disabled = false;
    }
  }

  (async () => {
    try {
      const rt = await get('/runtime');
      manifests = rt.providers || [];
      replace(provider, manifests.map((m) => h('option', { value: m.id }, `${m.name} (${m.id})`)));
      showCapabilities();
    } catch (err) {
      outcome.className = 'error';
      outcome.textContent = `Could not read the providers: ${errorText(err)}`;
    }
  })();

  return () => {};
}
