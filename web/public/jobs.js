// Jobs: a live table, newest first, filtered by state / label / name and
// paginated with the API's cursor. Filters live in the URL (#/jobs?state=...).
// #/jobs?array=ID shows a job array (a sweep): its children with the values
// each was given and their final metrics side by side.
import { listJobs } from './api.js';
import { STATES, describePlacement, errorNote, fill, formatAge, h, poll, progressBar, stateBadge } from './ui.js';

const PAGE_SIZE = 20;
const ACTIVE = 'QUEUED,STARTING,RUNNING';

export function mount(root, params) {
  const filters = { state: params.state || '', label: params.label || '', name: params.name || '', array: params.array || '' };
  const arrayView = Boolean(filters.array);
  const cursors = [null];  // cursors[i] fetches page i; the last entry is the page shown.
  let nextCursor = null;

  const stateSelect = h('select', { id: 'filter-state', name: 'state' },
    h('option', { value: '' }, 'All states'),
    h('option', { value: ACTIVE }, 'Active (queued, starting, running)'),
    STATES.map((s) => h('option', { value: s }, s)));
  stateSelect.value = filters.state;
  const labelInput = h('input', { id: 'filter-label', name: 'label', value: filters.label, placeholder: 'key=value', autocomplete: 'off' });
  const nameInput = h('input', { id: 'filter-name', name: 'name', value: filters.name, placeholder: 'exact name', autocomplete: 'off' });
  // Filtering keeps focus where it is: the URL is replaced, the page is not remounted.
  const apply = (event) => {
    if (event) event.preventDefault();
    filters.state = stateSelect.value;
    filters.label = labelInput.value.trim();
    filters.name = nameInput.value.trim();
    const search = new URLSearchParams(Object.entries(filters).filter(([, v]) => v));
    const text = search.toString();
    history.replaceState(null, '', text ? `#/jobs?${text}` : '#/jobs');
    clearButton.hidden = !text;
    cursors.length = 1;
    restart();
  };
  const clearButton = h('button', { type: 'button', class: 'secondary', hidden: !(filters.state || filters.label || filters.name),
    onclick: () => {
      stateSelect.value = '';
      labelInput.value = '';
      nameInput.value = '';
      apply();
    } }, 'Clear filters');
  stateSelect.addEventListener('change', apply);

  const status = h('p', { class: 'table-status', role: 'status' });
  const body = h('tbody');
  const previous = h('button', { type: 'button', class: 'secondary' }, '← Newer');
  const next = h('button', { type: 'button', class: 'secondary' }, 'Older →');
  const pageLabel = h('span', { class: 'muted' });
  const problem = h('div');

  root.append(
    h('div', { class: 'page-head' },
      h('h1', {}, arrayView ? `Job array #${filters.array}` : 'Jobs'),
      h('a', { class: 'button', href: '#/submit' }, 'Submit a job')),
    h('form', { class: 'filters', role: 'search', 'aria-label': 'Filter jobs', onsubmit: apply },
      h('div', { class: 'field' }, h('label', { for: 'filter-state' }, 'State'), stateSelect),
      h('div', { class: 'field' }, h('label', { for: 'filter-label' }, 'Label'), labelInput),
      h('div', { class: 'field' }, h('label', { for: 'filter-name' }, 'Name'), nameInput),
      h('button', { type: 'submit' }, 'Filter'),
      clearButton),
    problem,
    h('table', { class: 'jobs-table' },
      h('caption', { class: 'visually-hidden' }, 'Jobs, newest first'),
      h('thead', {}, h('tr', {},
        (arrayView ? ['ID', 'State', 'Swept values', 'Final metrics', 'Progress', 'Age']
          : ['ID', 'State', 'Name', 'Cores / slice', 'Progress', 'Priority', 'Age', 'Tenant'])
          .map((c) => h('th', { scope: 'col' }, c)))),
      body),
    status,
    h('nav', { class: 'pager', 'aria-label': 'Pages of jobs' }, previous, pageLabel, next));

  const render = (page) => {
    nextCursor = page.next_cursor || null;
    const now = Date.now();
    // Rows are rebuilt each second; keep keyboard focus on the same link.
    const focused = body.contains(document.activeElement) ? document.activeElement.id : null;
    if (arrayView) {
      fill(body, [...page.jobs].sort((a, b) => (a.array?.index ?? 0) - (b.array?.index ?? 0)).map((job) =>
        h('tr', { 'data-job': job.id, 'data-state': job.state },
          h('td', { 'data-label': 'ID' }, h('a', { href: `#/jobs/${job.id}`, id: `job-id-${job.id}` }, `#${job.id}`)),
          h('td', { 'data-label': 'State' }, stateBadge(job.state)),
          h('td', { 'data-label': 'Swept values' }, valuesOf(job.array?.values)),
          h('td', { 'data-label': 'Final metrics' }, valuesOf(job.metrics)),
          h('td', { 'data-label': 'Progress', class: 'progress-cell' }, progressBar(job)),
          h('td', { 'data-label': 'Age' }, h('time', { datetime: job.created_at, title: job.created_at }, formatAge(job.created_at, now))))));
    } else {
    fill(body, page.jobs.map((job) => h('tr', { 'data-job': job.id, 'data-state': job.state },
      h('td', { 'data-label': 'ID' }, h('a', { href: `#/jobs/${job.id}`, id: `job-id-${job.id}` }, `#${job.id}`)),
      h('td', { 'data-label': 'State' }, stateBadge(job.state)),
      h('td', { 'data-label': 'Name', class: 'name' },
        h('span', {}, h('a', { href: `#/jobs/${job.id}`, id: `job-name-${job.id}` }, job.name || '(unnamed)'), labelsOf(job))),
      h('td', { 'data-label': 'Cores / slice' }, describePlacement(job)),
      h('td', { 'data-label': 'Progress', class: 'progress-cell' }, progressBar(job)),
      h('td', { 'data-label': 'Priority', class: 'number' }, job.priority ?? 0),
      h('td', { 'data-label': 'Age' }, h('time', { datetime: job.created_at, title: job.created_at }, formatAge(job.created_at, now))),
      h('td', { 'data-label': 'Tenant' }, job.tenant || '—'))));
    }
    if (focused) document.getElementById(focused)?.focus({ preventScroll: true });
    const pageNumber = cursors.length;
    status.textContent = page.jobs.length === 0
      ? (pageNumber === 1 ? 'No jobs match. Submit one, or clear the filters.' : 'No more jobs.')
      : `Page ${pageNumber}: ${page.jobs.length} job${page.jobs.length === 1 ? '' : 's'}${nextCursor ? ', more on older pages' : ''}.`;
    pageLabel.textContent = `Page ${pageNumber}`;
    previous.disabled = pageNumber === 1;
    next.disabled = !nextCursor;
  };

  const refresh = async () => {
    const page = await listJobs({ ...filters, limit: PAGE_SIZE, cursor: cursors[cursors.length - 1] });
    problem.replaceChildren();
    render(page);
  };
  let stop = () => {};
  const restart = () => {
    stop();
    stop = poll(refresh, 1000, (error) => fill(problem, errorNote(error)));
  };
  restart();
  previous.addEventListener('click', () => {
    if (cursors.length > 1) cursors.pop();
    restart();
  });
  next.addEventListener('click', () => {
    if (nextCursor) cursors.push(nextCursor);
    restart();
  });
  return () => stop();
}

function valuesOf(values) {
  const entries = Object.entries(values || {});
  if (entries.length === 0) return '—';
  return h('span', { class: 'labels' }, entries.map(([k, v]) =>
    h('span', { class: 'label-chip' }, `${k}=${typeof v === 'number' ? Number(v.toPrecision(4)) : JSON.stringify(v)}`)));
}

function labelsOf(job) {
  const labels = Object.entries(job.labels || {});
  const chips = labels.map(([k, v]) => h('span', { class: 'label-chip' }, `${k}=${v}`));
  if (job.array) {
    chips.push(h('a', { class: 'label-chip', href: `#/jobs?array=${job.array.id}` }, `array #${job.array.id}[${job.array.index}]`));
  }
  if (chips.length === 0) return null;
  return h('span', { class: 'labels' }, chips);
}
