// The conversation view's message box (conversation.js): the next turn's input, its provider
// (the last turn's unless changed) and config, and what the conversation's busy policy makes of a
// message sent while a turn runs. A message the server refuses stays in the box.

import { get, post, parseConfig, ApiError } from './api.js';
import { h, replace, errorText } from './dom.js';

// What a message sent while a turn is running does, by busy policy.
const POLICY_MEANING = {
  parallel: 'a message sent while a turn is running runs beside it.',
  enqueue: 'a message sent while a turn is running waits for it, then is answered.',
  reject: 'a message sent while a turn is running is refused; send it again once the turn has ended.',
  interrupt: 'a message sent while a turn is running cancels that turn and is answered instead.',
};


// createComposer is the message box: the next turn's input, its provider (the last turn's unless
// changed) and config, and the conversation's busy policy. A message the server refuses stays in
// the box.
export function createComposer(conversationId, sent) {
  const message = h('textarea', { id: 'message', name: 'message', rows: 3, 'aria-describedby': 'message-help conversation-policy' });
  const provider = h('select', { id: 'message-provider', name: 'provider' });
  const config = h('textarea', { id: 'message-config', name: 'config', rows: 4, class: 'mono', spellcheck: 'false',
    'aria-describedby': 'message-config-error' }, '{}');
  const configError = h('p', { id: 'message-config-error', class: 'error', 'aria-live': 'polite' });
  const configBox = h('details', { class: 'composer-config' }, h('summary', {}, 'Config (JSON object)'), config, configError);
  const send = h('button', { type: 'submit', id: 'send', class: 'primary' }, 'Send');
  const policy = h('p', { id: 'conversation-policy', class: 'hint' });
  const result = h('p', { id: 'message-result', role: 'status', 'aria-live': 'polite' });
  const form = h('form', { id: 'message-form', class: 'composer', onsubmit: (e) => { e.preventDefault(); submit(); } },
    h('label', { for: 'message' }, 'Next message'), message,
    h('p', { id: 'message-help', class: 'hint' }, 'Enter sends it, Shift+Enter starts a new line.'),
    h('div', { class: 'composer-row' }, h('label', { for: 'message-provider' }, 'Provider'), provider, send),
    configBox, policy, result);
  let providerChosen = false; // by the person: then the last turn's no longer decides
  let lastProvider = null;

  message.addEventListener('keydown', (e) => {
    if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) { e.preventDefault(); form.requestSubmit(); }
  });
  provider.addEventListener('change', () => { providerChosen = true; });

  function chooseProvider() {
    if (!providerChosen && lastProvider && [...provider.options].some((o) => o.value === lastProvider)) provider.value = lastProvider;
  }

  (async () => {
    try {
      const rt = await get('/runtime');
      replace(provider, (rt.providers || []).map((m) => h('option', { value: m.id }, `${m.name} (${m.id})`)));
      chooseProvider();
    } catch (err) {
      result.className = 'error';
      result.textContent = `Could not read the providers: ${errorText(err)}`;
    }
  })();

  async function submit() {
    if (send.disabled) return; // Enter while the last message is being sent
    const input = message.value;
    if (!input.trim()) {
      result.className = 'error';
      result.textContent = 'Write a message first.';
      message.focus();
      return;
    }
    let cfg;
    try {
      cfg = parseConfig(config.value);
      configError.textContent = '';
      config.removeAttribute('aria-invalid');
    } catch (err) {
      configError.textContent = `Config is not valid: ${err.message}`;
      config.setAttribute('aria-invalid', 'true');
      configBox.open = true;
      config.focus();
      return;
    }
    send.disabled = true;
    result.className = '';
    delete result.dataset.code;
    result.textContent = 'Sending…';
    try {
      const exec = await post('/executions', { conversationId, providerId: provider.value, input, config: cfg });
      message.value = '';
      const after = exec.waitingFor?.join(', ');
      result.textContent = !after ? `Sent as ${exec.id}.`
        : form.dataset.policy === 'interrupt' ? `Sent as ${exec.id}: it interrupts ${after}, then is answered.`
          : `Sent as ${exec.id}: queued, it waits for ${after} to end.`;
      sent(exec);
    } catch (err) {
      result.className = 'error';
      result.dataset.code = err.code || '';
      if (err instanceof ApiError && err.code === 'CONVERSATION_BUSY') {
        const busy = (err.details && err.details.executionIds) || [];
        result.textContent = `Not sent: the conversation is busy (${err.code}): ${busy.join(', ') || 'a turn'} has not ended, and its busy policy refuses a message meanwhile. `
          + 'Your message is kept in the box: send it again once that turn has ended.';
      } else {
        result.textContent = `Not sent: ${errorText(err)}. Your message is kept in the box.`;
      }
    } finally {
      send.disabled = false;
    }
  }

  return {
    form,
    // showPolicy says what a message sent during a turn does (absent: parallel, the protocol's).
    showPolicy(busyPolicy) {
      const name = busyPolicy || 'parallel';
      form.dataset.policy = name;
      replace(policy, 'Busy policy: ', h('strong', {}, name), busyPolicy ? '' : ' (none set)', ` — ${POLICY_MEANING[name] || ''}`);
    },
    focus() { message.focus({ preventScroll: true }); },
    lastTurn(x) {
      lastProvider = x ? x.providerId : null;
      chooseProvider();
    },
  };
}
