// Pool: every host as a row of its cores, coloured by the job on each (hover,
// focus or click shows it), its health, drain / fail / recover, and the
// utilisation over time (polled each second, the last ten minutes), and the
// TPU core-hours each tenant used over the last day (GET /v1/usage).
// The pool also lists its agents (a standalone serve's own one, or a
// cluster's: state, last heartbeat, hosts, running jobs), each host names its
// agent, the hosts of a lost agent show unreachable, and the cores of a slice
// spanning agents say so.
// Each generation shows its layout (GET /v1/pool "generations"): its facts,
// and from v4 on its chips in the shape of the largest slice its hosts form,
// coloured by host: a 2D grid for v5e/v6e, a 3D block of layers for v4/v5p.
import { getPool, getUsage, hostAction } from './api.js';
import { lineChart } from './chart.js';
import { limitsEditor } from './limits.js';
import { announce, errorNote, fill, formatAge, h, healthBadge, jobColour, poll } from './ui.js';

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
  const layouts = h('div', { id: 'generation-layouts' });
  const layoutsSection = h('section', { class: 'card', id: 'generations-section', 'aria-labelledby': 'generations-heading', hidden: true },
    h('h2', { id: 'generations-heading' }, 'Generations'), layouts);
  const legend = h('ul', { class: 'legend', 'aria-label': 'Jobs on the pool' });
  const notice = h('div');
  const chart = lineChart({ title: 'Utilisation (% of cores busy)', time: true, xLabel: 'time', yRange: [0, 100],
    series: [{ label: 'pool', stroke: '#111827' }] });
  chart.element.id = 'chart-utilisation';
  const usage = h('div', { id: 'usage-chart', class: 'usage-chart' });
  const agentsCount = h('span', { class: 'muted small', id: 'agents-count' });
  const agentsList = h('div', { id: 'agents' });
  const agentsSection = h('section', { class: 'card', id: 'agents-section', 'aria-labelledby': 'agents-heading' },
    h('div', { class: 'section-head' }, h('h2', { id: 'agents-heading' }, 'Agents'), agentsCount), agentsList);

  root.append(
    h('div', { class: 'page-head' }, h('h1', {}, 'Pool')),
    notice,
    h('section', { class: 'card', 'aria-labelledby': 'summary-heading' },
      h('h2', { id: 'summary-heading', class: 'visually-hidden' }, 'Summary'), summary),
    agentsSection,
    layoutsSection,
    h('section', { class: 'card', 'aria-labelledby': 'hosts-heading' },
      h('div', { class: 'section-head' }, h('h2', { id: 'hosts-heading' }, 'Hosts')),
      detail, hostsList, legend),
    h('section', { class: 'card', 'aria-labelledby': 'util-heading' },
      h('h2', { id: 'util-heading', class: 'visually-hidden' }, 'Utilisation over time'), chart.element),
    h('section', { class: 'card', 'aria-labelledby': 'usage-heading' },
      h('h2', { id: 'usage-heading' }, 'Usage, last 24 hours (TPU core-hours)'), usage),
    limitsEditor());

  const history = { times: [], pool: [] };
  let lastSnapshot = '';
  let lastAgents = '';
  let selected = null;  // job id whose cores are highlighted
  let sliceAgents = new Map();  // job id -> agent names, for a slice spanning agents

  const showCore = (host, core) => {
    if (core.job === null || core.job === undefined) {
      fill(detail, `${host.name} core ${core.core}: free`, host.health !== 'healthy' ? ` (host ${host.health})` : '');
      return;
    }
    const across = sliceAgents.get(core.job);
    fill(detail, `${host.name} core ${core.core}: `,
      h('a', { href: `#/jobs/${core.job}` }, `job #${core.job}${core.job_name ? ` ${core.job_name}` : ''}`),
      across ? `, one slice across ${across.join(', ')}` : '');
  };
  // Re-rendering replaces the elements: the one that had focus gets it back.
  const keepingFocus = (draw) => {
    const focused = document.activeElement && document.activeElement.id;
    draw();
    if (focused) {
      const again = document.getElementById(focused);
      if (again && again !== document.activeElement) again.focus({ preventScroll: true });
    }
  };

  // One row per agent; drawn again only when something other than the
  // heartbeat changed (the ages tick on their own, below).
  const renderAgents = (pool) => {
    const agents = Array.isArray(pool.agents) ? pool.agents : [];
    const names = new Map();  // job id -> name, from the cores
    const onHosts = new Map();  // agent -> job ids on its hosts' cores
    for (const host of pool.hosts) {
      for (const core of host.cores) {
        if (core.job === null || core.job === undefined) continue;
        names.set(core.job, core.job_name);
        if (!onHosts.has(host.agent)) onHosts.set(host.agent, new Set());
        onHosts.get(host.agent).add(core.job);
      }
    }
    // An agent runs its own jobs (running_jobs) and its parts of slices led by another agent.
    const rows = agents.map((agent) => ({
      ...agent,
      jobs: [...new Set([...(agent.running_jobs || []), ...(onHosts.get(agent.name) || [])])].sort((a, b) => a - b),
    }));
    const snapshot = JSON.stringify([rows.map(({ last_heartbeat: _, ...rest }) => rest), [...names]]);
    if (snapshot === lastAgents) {
      for (const agent of rows) {
        const time = agentsList.querySelector(`tr[data-agent="${CSS.escape(agent.name)}"] time`);
        if (!time) continue;
        time.setAttribute('datetime', agent.last_heartbeat);
        time.title = agent.last_heartbeat;
      }
      tickAges();
      return;
    }
    lastAgents = snapshot;
    const lost = rows.filter((agent) => agent.state === 'lost').length;
    agentsCount.textContent = `${rows.length} agent${rows.length === 1 ? '' : 's'}${lost ? `, ${lost} lost` : ''}`;
    if (rows.length === 0) {
      fill(agentsList, h('p', { class: 'muted' }, 'No agent has registered yet: start one with `tpujobs agent`.'));
      return;
    }
    keepingFocus(() => fill(agentsList, h('table', { class: 'agents-table' },
      h('caption', { class: 'visually-hidden' }, 'Agents: their state, last heartbeat, hosts and running jobs'),
      h('thead', {}, h('tr', {}, ['Agent', 'State', 'Last heartbeat', 'Workers', 'Hosts', 'Running jobs']
        .map((title) => h('th', { scope: 'col' }, title)))),
      h('tbody', {}, rows.map((agent) => h('tr', { 'data-agent': agent.name, 'data-state': agent.state },
        h('th', { scope: 'row', class: 'agent-name' }, agent.name),
        h('td', { 'data-label': 'State' }, agentBadge(agent.state)),
        h('td', { 'data-label': 'Last heartbeat' },
          h('time', { datetime: agent.last_heartbeat, title: agent.last_heartbeat }, formatAge(agent.last_heartbeat))),
        h('td', { 'data-label': 'Workers', class: 'number' }, agent.workers ?? '—'),
        h('td', { 'data-label': 'Hosts', class: 'agent-hosts' }, (agent.hosts || []).length
          ? commas(agent.hosts.map((name) => h('span', { class: 'host-chip' }, name))) : '—'),
        h('td', { 'data-label': 'Running jobs', class: 'agent-jobs' }, agent.jobs.length
          ? commas(agent.jobs.map((job) => h('a', { href: `#/jobs/${job}`, id: `agent-${agent.name}-job-${job}` },
            `#${job}${names.get(job) ? ` ${names.get(job)}` : ''}`)))
          : h('span', { class: 'muted' }, 'none'))))))));
  };
  const tickAges = () => {
    for (const time of agentsList.querySelectorAll('time[datetime]')) time.textContent = formatAge(time.getAttribute('datetime'));
  };
  const ticker = setInterval(tickAges, 1000);

  const render = (pool) => {
    fill(summary,
      fact('Cores busy', `${pool.used_cores} / ${pool.total_cores}`),
      fact('Healthy cores', pool.healthy_cores),
      fact('Utilisation', `${(pool.utilization * 100).toFixed(0)}%`),
      fact('Running jobs', pool.running_jobs),
      fact('Queued jobs', pool.queued_jobs),
      pool.cpu_jobs_running ? fact('CPU jobs', pool.cpu_jobs_running) : null,
      fact('Agents alive', `${(pool.agents ?? []).filter((a) => a.state === 'alive').length} / ${(pool.agents ?? []).length}`));
    renderAgents(pool);

    const snapshot = JSON.stringify([pool.hosts, selected]);
    if (snapshot === lastSnapshot) return;
    lastSnapshot = snapshot;
    layoutsSection.hidden = !Array.isArray(pool.generations) || pool.generations.length === 0;
    if (!layoutsSection.hidden) fill(layouts, pool.generations.map((g) => generationLayout(g, pool.hosts)));
    sliceAgents = agentsOfJobs(pool.hosts);
    const jobs = new Map();
    keepingFocus(() => fill(hostsList, pool.hosts.map((host) => {
      const health = host.health;  // "unreachable" while the host's agent is lost
      // An unreachable host comes back with its agent, not by Recover; it can
      // still be drained or failed so that nothing is placed on it then.
      const actions = {
        drain: health === 'healthy' || health === 'unreachable',
        fail: health !== 'failed',
        recover: health !== 'healthy' && health !== 'unreachable',
      };
      const badge = healthBadge(health);
      if (health === 'unreachable') badge.title = `Agent ${host.agent} is ${host.agent_state}: the host is back when the agent is`;
      return h('section', { class: 'host', 'data-host': host.name, 'data-health': health,
        'data-agent': host.agent || null, 'aria-label': `Host ${host.name}` },
        h('div', { class: 'host-head' },
          h('h3', {}, host.name), h('span', { class: 'muted small' }, host.generation),
          badge,
          host.agent ? h('span', { class: 'agent-chip', 'data-agent-state': host.agent_state },
            `agent ${host.agent}${host.agent_state !== 'alive' ? ` (${host.agent_state})` : ''}`) : null,
          h('span', { class: 'muted small host-use' }, `${host.cores_in_use}/${host.devices} busy`)),
        h('div', { class: 'cores', role: 'group', 'aria-label': `Cores of ${host.name}` }, host.cores.map((core) => {
          const busy = core.job !== null && core.job !== undefined;
          if (busy) jobs.set(core.job, core.job_name);
          const across = busy ? sliceAgents.get(core.job) : undefined;
          const label = busy
            ? `core ${core.core}: job ${core.job}${core.job_name ? ` ${core.job_name}` : ''}${across ? `, one slice across ${across.join(', ')}` : ''}`
            : `core ${core.core}: free`;
          return h('button', {
            type: 'button', id: `core-${host.name}-${core.core}`,
            class: `core${busy ? ' busy' : ''}${across ? ' spans-agents' : ''}${busy && selected === core.job ? ' selected' : ''}`,
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
    })));
    fill(legend, [...jobs].map(([id, name]) => h('li', { 'data-job': id },
      h('span', { class: `swatch${sliceAgents.has(id) ? ' spans-agents' : ''}`, style: { background: jobColour(id) } }),
      h('a', { href: `#/jobs/${id}` }, `#${id} ${name || ''}`),
      sliceAgents.has(id) ? h('span', { class: 'muted small' }, `one slice across ${sliceAgents.get(id).join(', ')}`) : null)));
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
    clearInterval(ticker);
    stop();
    stopUsage();
    chart.destroy();
  };
}

// Job id -> the agents whose hosts hold its cores, for the jobs on more than one.
function agentsOfJobs(hosts) {
  const agents = new Map();
  for (const host of hosts) {
    if (!host.agent) continue;
    for (const core of host.cores) {
      if (core.job === null || core.job === undefined) continue;
      if (!agents.has(core.job)) agents.set(core.job, new Set());
      agents.get(core.job).add(host.agent);
    }
  }
  const spanning = new Map();
  for (const [job, names] of agents) if (names.size > 1) spanning.set(job, [...names].sort());
  return spanning;
}

const GIB = 2 ** 30;

// "4x4" -> [4, 4, 1]; "2x2x4" -> [2, 2, 4].
function dims(text) {
  const parts = text.split('x').map(Number);
  while (parts.length < 3) parts.push(1);
  return parts;
}

// One generation: its facts, and its chips laid out as the slice its hosts
// form. Hosts tile the topology with their own block (2x4 on v5e/v6e, 2x2x1
// on v4/v5p), x first, then y, then z; a chip is the host's core numbered the
// same way within the block, so it shows that core's job.
function generationLayout(g, hosts) {
  const mine = hosts.filter((host) => host.generation === g.generation);
  const facts = h('p', { class: 'muted small generation-facts' },
    `${g.hosts} host${g.hosts === 1 ? '' : 's'} × ${g.devices_per_host} devices (${g.tensorcores_per_chip} TensorCore${g.tensorcores_per_chip === 1 ? '' : 's'} per chip; types count ${g.type_counts}), `
    + `HBM ${(g.hbm_bytes_per_device / GIB).toFixed(0)} GiB per device (XLA reports ${(g.hbm_reported_bytes / GIB).toFixed(2)}G), `
    + `MXU ${g.mxu_dim}×${g.mxu_dim}, ${(g.peak_bf16_flops_per_device / 1e12).toFixed(0)} TFLOP/s bf16`);
  const title = g.topology ? `${g.generation}: ${g.slice}, topology ${g.topology} (hosts of ${g.host_block})` : `${g.generation}: ${g.slice}`;
  const section = h('section', { class: 'generation-layout', 'data-generation': g.generation, 'data-rank': g.topology_rank,
    'data-topology': g.topology || null, 'aria-label': `Layout of ${g.generation}` }, h('h3', {}, title), facts);
  if (!g.topology || !g.host_block) return section;
  const [X, Y, Z] = dims(g.topology);
  const [bx, by, bz] = dims(g.host_block);
  const layers = [];
  for (let z = 0; z < Z; z += 1) {
    const rows = [];
    for (let y = 0; y < Y; y += 1) {
      const chips = [];
      for (let x = 0; x < X; x += 1) {
        const block = Math.floor(x / bx) + (X / bx) * (Math.floor(y / by) + (Y / by) * Math.floor(z / bz));
        const core = (x % bx) + bx * ((y % by) + by * (z % bz));
        const host = mine[block];
        const job = host && host.cores[core] ? host.cores[core].job : null;
        const busy = job !== null && job !== undefined;
        chips.push(h('span', { class: `chip${busy ? ' busy' : ''}`, 'data-host': host ? host.name : null, 'data-core': core,
          'data-chip': `${x},${y},${z}`, title: `chip (${x}, ${y}, ${z}): ${host ? `${host.name} core ${core}` : 'no host'}${busy ? `, job ${job}` : ''}`,
          style: { display: 'inline-block', width: '14px', height: '14px', margin: '1px', borderRadius: '2px',
            border: `2px solid hsl(${(block * 67) % 360} 60% 45%)`, background: busy ? jobColour(job) : '#f3f4f6' } }));
      }
      rows.push(h('div', { class: 'chip-row', style: { whiteSpace: 'nowrap', lineHeight: '0' } }, chips));
    }
    // A 3D topology draws its z layers one behind the other, each shifted up
    // and right: a block, not a row of hosts.
    layers.push(h('div', { class: 'chip-layer', 'data-z': z, 'aria-label': `z = ${z}`,
      style: g.topology_rank === 3 ? { position: 'absolute', left: `${z * 10}px`, bottom: `${z * 10}px`, opacity: String(1 - 0.5 * z / Z) } : {} }, rows));
  }
  const chipSize = 18;
  section.append(h('div', { class: `chip-grid rank-${g.topology_rank}`, role: 'img',
    'aria-label': `${g.slice}: ${g.topology} chips in ${g.hosts} hosts of ${g.host_block}`,
    style: g.topology_rank === 3 ? { position: 'relative', height: `${Y * chipSize + Z * 10}px`, width: `${X * chipSize + Z * 10}px` } : {} },
  g.topology_rank === 3 ? layers.slice().reverse() : layers));
  return section;
}

// [a, b, c] -> [a, ', ', b, ', ', c]: list items read apart, on screen and aloud.
function commas(items) {
  return items.flatMap((item, index) => (index ? [', ', item] : [item]));
}

function agentBadge(state) {
  return h('span', { class: `badge agent-${state}` }, state || '—');
}

function fact(term, value) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value));
}
