// The single-page shell: hash routes to pages, the header's pool summary.
// A page is a module exporting mount(root, params) that returns a function
// undoing everything it started (timers, streams, charts).
import * as jobsPage from './jobs.js';
import * as jobPage from './job.js';
import * as submitPage from './submit.js';
import * as poolPage from './pool.js';
import { getPool, getToken, setToken } from './api.js';
import { fill, h, poll } from './ui.js';

const routes = [
  { pattern: /^#\/jobs\/(\d+)$/, page: jobPage, nav: 'jobs', params: (m) => ({ id: Number(m[1]) }) },
  { pattern: /^#\/jobs(?:\?(.*))?$/, page: jobsPage, nav: 'jobs', params: (m) => Object.fromEntries(new URLSearchParams(m[1] || '')) },
  { pattern: /^#\/submit$/, page: submitPage, nav: 'submit', params: () => ({}) },
  { pattern: /^#\/pool$/, page: poolPage, nav: 'pool', params: () => ({}) },
];

let unmount = null;

function route() {
  const hash = location.hash || '#/jobs';
  const main = document.getElementById('main');
  if (unmount) {
    unmount();
    unmount = null;
  }
  const match = routes.map((r) => ({ r, m: hash.match(r.pattern) })).find(({ m }) => m);
  for (const link of document.querySelectorAll('[data-nav]')) {
    if (match && link.dataset.nav === match.r.nav) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (!match) {
    document.title = 'Not found · tpujobs';
    fill(main, h('h1', {}, 'Not found'), h('p', {}, 'No page at ', h('code', {}, hash), '. ', h('a', { href: '#/jobs' }, 'Go to the jobs.')));
    return;
  }
  main.replaceChildren();
  unmount = match.r.page.mount(main, match.r.params(match.m));
  // Moving focus to the new page's heading tells screen readers the page changed.
  const heading = main.querySelector('h1');
  if (heading && document.activeElement !== document.body) {
    heading.setAttribute('tabindex', '-1');
    heading.focus({ preventScroll: true });
  }
  document.title = `${heading ? heading.textContent : 'tpujobs'} · tpujobs`;
}

function watchPoolSummary() {
  const summary = document.getElementById('pool-summary');
  poll(async () => {
    const pool = await getPool();
    summary.textContent = `${pool.used_cores}/${pool.total_cores} cores busy · ${pool.running_jobs} running · ${pool.queued_jobs} queued`;
  }, 2000, () => { summary.textContent = 'service unreachable'; });
}

// A service with API tokens answers 401: ask for one, keep it in this browser.
function askForToken(problem) {
  const banner = document.getElementById('auth');
  if (!banner.hidden) return;
  const input = h('input', { id: 'token', type: 'password', autocomplete: 'off', required: true });
  fill(banner,
    h('form', { class: 'auth-form', 'aria-labelledby': 'auth-heading', onsubmit: (event) => {
      event.preventDefault();
      setToken(input.value.trim());
      banner.hidden = true;
      showSignedIn();
      route();
    } },
    h('h2', { id: 'auth-heading' }, 'This service needs an API token'),
    h('p', { class: 'small' }, problem.detail || '', problem.hint ? ` — ${problem.hint}` : ''),
    h('div', { class: 'field inline' }, h('label', { for: 'token' }, 'API token'), input, h('button', { type: 'submit' }, 'Use token'))));
  banner.hidden = false;
  input.focus();
}

function showSignedIn() {
  const slot = document.getElementById('signed-in');
  if (!getToken()) {
    slot.replaceChildren();
    return;
  }
  fill(slot, h('button', { type: 'button', class: 'link-button', onclick: () => {
    setToken('');
    showSignedIn();
    route();
  } }, 'Forget token'));
}

window.addEventListener('tpujobs:unauthorized', (event) => askForToken(event.detail));
window.addEventListener('hashchange', route);
showSignedIn();
if (!location.hash) history.replaceState(null, '', '#/jobs');
route();
watchPoolSummary();
