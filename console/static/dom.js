// h builds elements without innerHTML: every value from the server becomes text, never markup.

export function h(tag, attrs = {}, ...children) {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (key.startsWith('on')) el.addEventListener(key.slice(2), value);
    else if (key === 'class') el.className = value;
    else if (value === true) el.setAttribute(key, '');
    else el.setAttribute(key, String(value));
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const child of children) {
    if (child === undefined || child === null || child === false) continue;
    if (Array.isArray(child)) append(el, child);
    else el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
}

export function replace(el, ...children) {
  el.replaceChildren();
  append(el, children);
}

export function stateBadge(state, id) {
  return h('span', { class: `state state-${state}`, id }, state.replace('_', ' '));
}

export function when(iso) {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : d.toLocaleString();
}

export function errorText(err) {
  return err.code ? `${err.code}: ${err.message}` : String(err.message || err);
}

// safeHref keeps only http(s) links: an artifact URI is provider data and must not run script.
export function safeHref(uri) {
  try {
    const url = new URL(uri, location.href);
    return url.protocol === 'http:' || url.protocol === 'https:' ? url.href : null;
  } catch {
    return null;
  }
}

// cancelledText says how a cancelled execution ended, from its snapshot's cancelReason: a turn a
// newer start interrupted (busy policy interrupt: "Interrupted by exec_…") names that start with
// a link; another reason is quoted; none is plain "Cancelled.".
export function cancelledText(x) {
  const reason = x.cancelReason;
  const by = typeof reason === 'string' ? reason.match(/^Interrupted by (\S+)$/) : null;
  if (by) {
    return [h('span', { class: 'interrupted', 'data-interrupted-by': by[1] }, 'Interrupted by ',
      h('a', { class: 'mono', href: `#/executions/${encodeURIComponent(by[1])}` }, by[1]), ': a newer message cancelled this turn.')];
  }
  return [reason ? `Cancelled: ${reason}` : 'Cancelled.'];
}
