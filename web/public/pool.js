// Pool: every host as a row of its cores, coloured by the job on each (hover,
// focus or click shows it), its health, drain / fail / recover, and the
// utilisation over time (polled each second, the last ten minutes), and the
// TPU core-hours each tenant used over the last day (GET /v1/usage).
import { getPool, getUsage, hostAction } from './api.js';
import { lineChart } from './chart.js';
import { announce, errorNote, fill, h, healthBadge, jobColour, poll } from './ui.js';

const HISTORY_SECONDS = 600;
const ACTIONS = {
  drain: { label: 'Drain', title: 'Stop placing new jobs here; running jobs finish' },
  fail: { label: 'Fail', title: 'Mark the host failed: its jobs end UNAVAILABLE or retry elsewhere' },
  recover: { label: 'Recover', title: 'Return the host to service' },
};

export function mount(root) {
  const summary = h('dl', { class: 'facts columns pool-facts' });
  const detail = h('p', { class: 'core-detail', id: 'core-detail', 'aria-live': 'polite' },
    'Hover, focus or click a core to see the job on it.');
  const hostsList = h('div', { class: 'hosts', id: 'hosts' });
  const legend = h('ul', { class: 'legend', 'aria-label': 'Jobs on the pool' });
  const notice = h('div');
  const chart = lineChart({ title: 'Utilisation (% of cores busy)', time: true, xLabel: 'time', yRange: [0, 100],
    series: [{ label: 'pool', stroke: '#111827' }] });
  chart.element.id = 'chart-utilisation';
  const usage = h('div', { id: 'usage-chart', class: 'usage-chart' });

  root.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Pool')),
    notice,
    h('section', { class: 'card', 'aria-labelledby': 'summary-heading' },
      h('h2', { id: 'summary-heading', class: 'visually-hidden' }, 'Summary'), summary),
    h('section', { class: 'card', 'aria-labelledby': 'hosts-heading' },
      h('div', { class: 'section-head' }, h('h2', { id: 'hosts-heading' }, 'Hosts')),
      detail, hostsList, legend),
    h('section', { class: 'card', 'aria-labelledby': 'util-heading' },
      h('h2', { id: 'util-heading', class: 'visually-hidden' }, 'Utilisation over time'), chart.element),
    h('section', { class: 'card', 'aria-labelledby': 'usage-heading' },
      h('h2', { id: 'usage-heading' }, 'Usage, last 24 hours (TPU core-hours)'), usage));

  const history = { times: [], pool: [] };
  let lastSnapshot = '';
  let selected = null;  // job id whose cores are highlighted

  const showCore = (host, core) => {
    if (core.job === null || core.job === undefined) {
      fill(detail, `${host.name} core ${core.core}: free`, host.health !== 'healthy' ? ` (host ${host.health})` : '');
      return;
    }
    fill(detail, `${host.name} core ${core.core}: `,
      h('a', { href: `#/jobs/${core.job}` }, `job #${core.job}${core.job_name ? ` ${core.job_name}` : ''}`));
  };

  const render = (pool) => {
    fill(summary,
      fact('Cores busy', `${pool.used_cores} / ${pool.total_cores}`),
      fact('Healthy cores', pool.healthy_cores),
      fact('Utilisation', `${(pool.utilization * 100).toFixed(0)}%`),
      fact('Running jobs', pool.running_jobs),
      fact('Queued jobs', pool.queued_jobs),
      pool.cpu_jobs_running ? fact('CPU jobs', pool.cpu_jobs_running) : null);

    const snapshot = JSON.stringify([pool.hosts, selected]);
    if (snapshot === lastSnapshot) return;
    lastSnapshot = snapshot;
    const focused = document.activeElement && document.activeElement.id;
    const jobs = new Map();
    fill(hostsList, pool.hosts.map((host) => {
      const actions = {
        drain: host.health === 'healthy',
        fail: host.health !== 'failed',
        recover: host.health !== 'healthy',
      };
      return h('section', { class: 'host', 'data-host': host.name, 'data-health': host.health,
        'aria-label': `Host ${host.name}` },
        h('div', { class: 'host-head' },
          h('h3', {}, host.name), h('span', { class: 'muted small' }, host.generation),
          healthBadge(host.health),
          h('span', { class: 'muted small host-use' }, `${host.cores_in_use}/${host.devices} busy`)),
        h('div', { class: 'cores', role: 'group', 'aria-label': `Cores of ${host.name}` }, host.cores.map((core) => {
          const busy = core.job !== null && core.job !== undefined;
          if (busy) jobs.set(core.job, core.job_name);
          const label = busy ? `core ${core.core}: job ${core.job}${core.job_name ? ` ${core.job_name}` : ''}` : `core ${core.core}: free`;
          return h('button', {
            type: 'button', id: `core-${host.name}-${core.core}`,
            class: `core${busy ? ' busy' : ''}${busy && selected === core.job ? ' selected' : ''}`,
            style: busy ? { background: jobColour(core.job) } : null,
            title: label, 'aria-label': label, 'data-job': busy ? core.job : null,
            onmouseenter: () => showCore(host, core),
            onfocus: () => showCore(host, core),
            onclick: () => {
              selected = busy && selected !== core.job ? core.job : null;
              showCore(host, core);
              lastSnapshot = '';
              render(pool);
            },
          }, String(core.core));
        })),
        h('div', { class: 'host-actions' }, Object.entries(ACTIONS).map(([action, info]) => h('button', {
          type: 'button', class: action === 'fail' ? 'danger small' : 'secondary small', id: `action-${host.name}-${action}`,
          title: info.title, disabled: !actions[action], 'aria-label': `${info.label} ${host.name}`,
          onclick: () => act(host.name, action),
        }, info.label))));
    }));
    fill(legend, [...jobs].map(([id, name]) => h('li', {},
      h('span', { class: 'swatch', style: { background: jobColour(id) } }),
      h('a', { href: `#/jobs/${id}` }, `#${id} ${name || ''}`))));
    if (focused) {
      const again = document.getElementById(focused);
      if (again) again.focus({ preventScroll: true });
    }
  };

  const act = async (host, action) => {
    if (action === 'fail' && !window.confirm(`Fail ${host}? Jobs on it end UNAVAILABLE or retry elsewhere.`)) return;
    try {
      const answer = await hostAction(host, action);
      const affected = answer.affected_jobs && answer.affected_jobs.length ? `; jobs affected: ${answer.affected_jobs.join(', ')}` : '';
      fill(notice, h('p', { class: 'info-note' }, `${host} is now ${answer.health}${affected}.`));
      announce(`${host} is now ${answer.health}`);
      await refresh();
    } catch (error) {
      fill(notice, h('p', { class: 'error-note', role: 'alert' }, `${action} ${host}: ${error.message}`));
    }
  };

  const record = (pool) => {
    const now = Date.now() / 1000;
    history.times.push(now);
    history.pool.push(pool.utilization * 100);
    while (history.times.length && history.times[0] < now - HISTORY_SECONDS) {
      history.times.shift();
      history.pool.shift();
    }
    chart.setData([history.times, history.pool]);
  };

  const refresh = async () => {
    const pool = await getPool();
    notice.querySelector('.error-note.unreachable')?.remove();
    render(pool);
    record(pool);
  };
  const stop = poll(refresh, 1000, (error) => {
    if (!notice.querySelector('.unreachable')) {
      const note = errorNote(error);
      note.classList.add('unreachable');
      notice.append(note);
    }
  });
  // One bar per tenant (or per label for an admin's view), the longest the
  // most used; each bar split by generation.
  const renderUsage = (answer) => {
    const groups = answer.groups || [];
    if (groups.length === 0) {
      fill(usage, h('p', { class: 'muted' }, 'No TPU core was held in the last 24 hours.'));
      return;
    }
    const most = Math.max(...groups.map((g) => g.core_seconds), 1e-9);
    fill(usage, h('table', { class: 'usage-table' },
      h('caption', { class: 'visually-hidden' }, 'TPU core-hours per tenant, last 24 hours'),
      h('tbody', {}, groups.map((g) => h('tr', { 'data-group': g.group },
        h('th', { scope: 'row' }, g.group || '(none)'),
        h('td', { class: 'usage-bar-cell' },
          h('div', { class: 'usage-bar', style: `width: ${(100 * g.core_seconds / most).toFixed(1)}%`,
            title: Object.entries(g.by_generation || {}).map(([gen, s]) => `${gen}: ${(s / 3600).toFixed(2)} core-hours`).join(', ') })),
        h('td', { class: 'number' }, (g.core_seconds / 3600).toFixed(2)),
        h('td', { class: 'muted' }, `${g.jobs} job${g.jobs === 1 ? '' : 's'}`))))));
  };
  const stopUsage = poll(async () => renderUsage(await getUsage({ from: '24h' })), 10000,
    (error) => fill(usage, errorNote(error)));
  return () => {
    stop();
    stopUsage();
    chart.destroy();
  };
}

function fact(term, value) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value));
}
