// Small helpers every page shares: building DOM without innerHTML, formatting,
// polling, and screen-reader announcements.

// h('a', {href: '#/x', class: 'c'}, 'text', child) builds an element. Attributes
// starting with "on" become listeners; null/false attributes and children are skipped.
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes || {})) {
    if (value === null || value === undefined || value === false) continue;
    if (key.startsWith('on')) element.addEventListener(key.slice(2), value);
    else if (key === 'class') element.className = value;
    else if (key === 'style' && typeof value === 'object') Object.assign(element.style, value);
    else element.setAttribute(key, value === true ? '' : value);
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children) {
    if (child === null || child === undefined || child === false) continue;
    if (Array.isArray(child)) append(element, child);
    else element.append(child instanceof Node ? child : String(child));
  }
}

// Replaces the children of `element`.
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

// Says `message` to screen readers (the page's polite live region).
export function announce(message) {
  const region = document.getElementById('announcer');
  region.textContent = '';
  setTimeout(() => { region.textContent = message; }, 50);
}

export const TERMINAL_STATES = ['SUCCEEDED', 'FAILED', 'CANCELLED'];
export const STATES = ['QUEUED', 'STARTING', 'RUNNING', ...TERMINAL_STATES];
export const isTerminal = (state) => TERMINAL_STATES.includes(state);

export function stateBadge(state) {
  return h('span', { class: `badge state-${(state || 'unknown').toLowerCase()}` }, state || '—');
}

export function healthBadge(health) {
  return h('span', { class: `badge health-${health}` }, health);
}

// "3 s", "4 min 10 s", "2 h 5 min".
export function formatDuration(seconds) {
  if (seconds === null || seconds === undefined || !Number.isFinite(seconds)) return '—';
  const s = Math.max(0, Math.round(seconds));
  if (s < 60) return `${s} s`;
  if (s < 3600) return `${Math.floor(s / 60)} min ${s % 60} s`;
  if (s < 86400) return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
  return `${Math.floor(s / 86400)} d ${Math.floor((s % 86400) / 3600)} h`;
}

export function formatAge(iso, now = Date.now()) {
  if (!iso) return '—';
  return `${formatDuration((now - Date.parse(iso)) / 1000)} ago`;
}

export function formatTime(iso) {
  if (!iso) return '—';
  return new Date(iso).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });
}

export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return '—';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = bytes;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit += 1;
  }
  return `${value.toFixed(value >= 100 || unit === 0 ? 0 : 1)} ${units[unit]}`;
}

export function formatNumber(value, digits = 4) {
  if (value === null || value === undefined || !Number.isFinite(value)) return '—';
  return Math.abs(value) >= 1000 ? Math.round(value).toLocaleString() : Number(value.toPrecision(digits)).toString();
}

// What a job runs on, in one short phrase: "v3-32 slice", "8 cores on host-1", "CPU".
export function describePlacement(job) {
  const allocation = job.allocation;
  const resolved = job.resolved;
  if (allocation && allocation.accelerator === 'cpu') return 'CPU';
  if (allocation && Array.isArray(allocation.cores)) {
    const hosts = allocation.hosts || [];
    const agents = allocation.slice?.parts?.length;
    if (hosts.length > 1 && allocation.accelerator_type) {
      return `${allocation.accelerator_type} slice${agents > 1 ? ` across ${agents} agents` : ''}`;
    }
    const count = allocation.cores.length;
    return `${count} core${count === 1 ? '' : 's'} on ${hosts.join(', ')}`;
  }
  if (resolved) {
    if (resolved.kind === 'cpu') return 'CPU';
    if (resolved.kind === 'slice' && resolved.accelerator_type) return `${resolved.accelerator_type} slice`;
    const generation = resolved.generation ? ` ${resolved.generation}` : '';
    return `${resolved.cores}${generation} core${resolved.cores === 1 ? '' : 's'}`;
  }
  return '—';
}

// A progress bar with "step / total" and the ETA, from a job's `progress`.
export function progressBar(job) {
  const progress = job.progress;
  if (!progress || !progress.total_steps) {
    return h('span', { class: 'muted' }, job.state === 'SUCCEEDED' ? 'done' : '—');
  }
  const step = job.state === 'SUCCEEDED' ? progress.total_steps : progress.step;
  const percent = Math.min(100, (100 * step) / progress.total_steps);
  const eta = !isTerminal(job.state) && progress.eta_seconds !== undefined ? ` · ETA ${formatDuration(progress.eta_seconds)}` : '';
  return h('div', { class: 'progress' },
    h('progress', { max: progress.total_steps, value: step, 'aria-label': `Step ${step} of ${progress.total_steps}` }),
    h('span', { class: 'progress-text' }, `${step} / ${progress.total_steps}${eta}`),
    h('span', { class: 'visually-hidden' }, ` (${Math.floor(percent)}%)`));
}

// A colour for a job id, stable across pages and reloads.
export function jobColour(id) {
  const hue = (Number(id) * 137.508) % 360;
  return `hsl(${hue.toFixed(0)} 65% 45%)`;
}

// Calls `task` now and then every `ms` after each run settles, until the
// returned function is called. A run that throws is reported to `onError`.
export function poll(task, ms, onError = console.error) {
  let timer = null;
  let stopped = false;
  const run = async () => {
    try {
      await task();
    } catch (error) {
      onError(error);
    }
    if (!stopped) timer = setTimeout(run, ms);
  };
  run();
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}

// An inline error message for a failed request.
export function errorNote(error) {
  return h('p', { class: 'error-note', role: 'alert' }, `Could not reach the service: ${error.message}`);
}

// Advisor warnings start with a code ("SMALL_BATCH: ..."): show it as a tag.
export function warningText(warning) {
  const match = /^([A-Z][A-Z0-9_]+): (.*)$/s.exec(warning);
  if (!match) return warning;
  return [h('span', { class: 'tag' }, match[1]), ' ', match[2]];
}
