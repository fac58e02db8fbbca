// The console's router: the part after "#" names the view, so the server serves one page and a
// reload or a shared link opens the same view.
//   #/                          executions, newest first (with ?state=… and paging kept in the view)
//   #/overview?provider=&state=&conversation=&window=
//                               charts over a time window, filters kept in the address
//   #/executions/<id>           one execution, live, with its timeline
//   #/conversations             the tenant's conversations, most recently active first; New chat
//   #/conversations/<id>        a conversation as a transcript
//   #/new?conversation=<id>     start an execution (in that conversation, when given)
//   #/inbox                     the actions waiting for an answer, answered from the list
// A view is a function (main element, params) that returns a cleanup function, called when the
// view is left: it closes the view's event stream and stops its polling.

import { get } from './api.js';
import { renderList } from './list.js';
import { renderExecution } from './execution.js';
import { renderStart } from './start.js';
import { renderConversation } from './conversation.js';
import { renderConversations } from './conversations.js';
import { renderOverview } from './overview.js';
import { renderInbox } from './inbox.js';

let leave = () => {};

function route() {
  leave();
  const main = document.getElementById('main');
  main.replaceChildren();
  const hash = location.hash.replace(/^#/, '') || '/';
  const [path, query = ''] = hash.split('?', 2);
  const params = new URLSearchParams(query);
  const exec = path.match(/^\/executions\/([^/]+)$/);
  const conv = path.match(/^\/conversations\/([^/]+)$/);
  let view = 'list';
  if (exec) {
    leave = renderExecution(main, decodeURIComponent(exec[1]));
    view = 'execution';
  } else if (conv) {
    leave = renderConversation(main, decodeURIComponent(conv[1]));
    view = 'conversation';
  } else if (path === '/conversations') {
    leave = renderConversations(main);
    view = 'conversations';
  } else if (path === '/new') {
    leave = renderStart(main, params);
    view = 'new';
  } else if (path === '/overview') {
    leave = renderOverview(main, params);
    view = 'overview';
  } else if (path === '/inbox') {
    leave = renderInbox(main);
    view = 'inbox';
  } else {
    leave = renderList(main);
  }
  for (const [id, name] of [['nav-list', 'list'], ['nav-conversations', 'conversations'], ['nav-inbox', 'inbox'], ['nav-overview', 'overview'], ['nav-new', 'new']]) {
    const link = document.getElementById(id);
    if (name === view) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
}

async function showRuntime() {
  try {
    const rt = await get('/runtime');
    document.getElementById('runtime-name').textContent = `${rt.name} ${rt.version} · protocol ${rt.protocolVersion}`;
  } catch (err) {
    document.getElementById('runtime-name').textContent = `Runtime unavailable: ${err.message}`;
  }
}

// Moving to another view starts it at the top and moves the keyboard focus to it, as a page load
// would: the browser keeps the scroll position across hash changes, which left a new view scrolled
// as far down as the last one was. preventScroll: focusing must not scroll back down.
window.addEventListener('hashchange', () => {
  route();
  window.scrollTo(0, 0);
  document.getElementById('main').focus({ preventScroll: true });
});
// The skip link must not change the hash: that would be read as a route.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  document.getElementById('main').focus();
});
route();
showRuntime();
