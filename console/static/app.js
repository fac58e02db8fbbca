// The console's router: the part after "#" names the view, so the server serves one page and a
// reload or a shared link opens the same view.
//   #/                      executions, newest first (with ?state=… and paging kept in the view)
//   #/executions/<id>       one execution, live
//   #/new                   start an execution
// A view is a function (main element, params) that returns a cleanup function, called when the
// view is left: it closes the view's event stream and stops its polling.

import { get } from './api.js';
import { renderList } from './list.js';
import { renderExecution } from './execution.js';
import { renderStart } from './start.js';

let leave = () => {};

function route() {
  leave();
  const main = document.getElementById('main');
  main.replaceChildren();
  const hash = location.hash.replace(/^#/, '') || '/';
  const exec = hash.match(/^\/executions\/([^/?]+)$/);
  let view = 'list';
  if (exec) {
    leave = renderExecution(main, decodeURIComponent(exec[1]));
    view = 'execution';
  } else if (hash === '/new') {
    leave = renderStart(main);
    view = 'new';
  } else {
    leave = renderList(main);
  }
  for (const [id, name] of [['nav-list', 'list'], ['nav-new', 'new']]) {
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

// Moving to another view moves the keyboard focus to it, as a page load would.
window.addEventListener('hashchange', () => {
  route();
  document.getElementById('main').focus();
});
// The skip link must not change the hash: that would be read as a route.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  document.getElementById('main').focus();
});
route();
showRuntime();
