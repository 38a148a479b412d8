// Job: everything about one job, live until it ends: state and timeline,
// queue position and pending reason, progress, charts, the log (followed over
// Server-Sent Events), where it runs, the advisor's warnings, its
// notification deliveries, the XLA report, and Cancel.
import {
  ApiError, cancelJob, followLogs, getJob, jobEvents, jobMetrics, jobNotifications, xlaReport,
} from './api.js';
import { lineChart } from './chart.js';
import {
  announce, describePlacement, errorNote, fill, formatAge, formatDuration, formatNumber, formatTime, h, isTerminal,
  jobColour, poll, progressBar, stateBadge, warningText,
} from './ui.js';

const PENDING_REASONS = {
  Resources: 'Waiting for enough free cores.',
  Priority: 'Waiting behind jobs with a higher priority or that were queued earlier.',
  HostUnhealthy: 'The hosts it needs are draining or failed.',
  Quota: 'The tenant is at its core quota.',
  Dependency: 'Waiting for the jobs it depends on to end (depends_on).',
  Preempted: 'Stopped at a checkpoint for a job of higher priority; resumes from it.',
};
const MAX_LOG_LINES = 5000;

export function mount(root, { id }) {
  const heading = h('h1', {}, `Job #${id}`);
  const badge = h('span', { class: 'state-holder' });
  const cancelButton = h('button', { type: 'button', class: 'danger', id: 'cancel' }, 'Cancel job');
  const notice = h('div');
  const overview = h('section', { class: 'card overview', 'aria-labelledby': 'overview-heading' });
  const waiting = h('section', { class: 'card waiting', 'aria-labelledby': 'waiting-heading', hidden: true });
  const failure = h('section', { class: 'card failure', 'aria-labelledby': 'failure-heading', hidden: true });
  const timeline = h('ol', { class: 'timeline' });
  const placement = h('div');
  const warnings = h('div');
  const notifications = h('section', { class: 'card', id: 'notifications', 'aria-labelledby': 'notifications-heading', hidden: true });
  const xla = h('div', {}, h('p', { class: 'muted' }, 'Written when the job ends.'));
  const followBox = h('input', { type: 'checkbox', id: 'follow-log', checked: true });
  const logView = h('pre', { class: 'log', id: 'log', role: 'log', 'aria-live': 'off', 'aria-label': 'Job log', tabindex: '0' });
  const logStatus = h('span', { class: 'muted small', id: 'log-status' }, 'waiting for output…');

  const lossChart = lineChart({ title: 'Loss', xLabel: 'step', series: [{ label: 'loss' }, { label: 'val_loss', stroke: '#dc2626' }] });
  const accuracyChart = lineChart({ title: 'Validation accuracy', xLabel: 'step', series: [{ label: 'val_accuracy', stroke: '#16a34a' }] });
  const throughputChart = lineChart({ title: 'Throughput (samples/s)', xLabel: 'step', series: [{ label: 'samples/s', stroke: '#9333ea' }] });
  const charts = h('div', { class: 'charts', hidden: true }, lossChart.element, accuracyChart.element, throughputChart.element);
  const noMetrics = h('p', { class: 'muted' }, 'The charts appear when training logs its first step.');
  lossChart.element.id = 'chart-loss';
  accuracyChart.element.id = 'chart-accuracy';
  throughputChart.element.id = 'chart-throughput';

  root.append(
    h('nav', { class: 'breadcrumbs', 'aria-label': 'Breadcrumbs' }, h('a', { href: '#/jobs' }, 'Jobs'), ' / ', `#${id}`),
    h('div', { class: 'page-head' }, h('div', { class: 'title' }, heading, badge), cancelButton),
    notice,
    h('div', { class: 'job-layout' },
      h('div', { class: 'job-main' },
        waiting, failure, overview,
        h('section', { class: 'card', 'aria-labelledby': 'charts-heading' },
          h('h2', { id: 'charts-heading' }, 'Training'), noMetrics, charts),
        h('section', { class: 'card', 'aria-labelledby': 'log-heading' },
          h('div', { class: 'section-head' }, h('h2', { id: 'log-heading' }, 'Log'), logStatus,
            h('label', { class: 'checkbox' }, followBox, ' Follow')),
          logView),
        h('section', { class: 'card', 'aria-labelledby': 'xla-heading' }, h('h2', { id: 'xla-heading' }, 'XLA metrics report'), xla)),
      h('aside', { class: 'job-side', 'aria-label': 'Job details' },
        h('section', { class: 'card', 'aria-labelledby': 'timeline-heading' }, h('h2', { id: 'timeline-heading' }, 'Timeline'), timeline),
        h('section', { class: 'card', 'aria-labelledby': 'placement-heading' }, h('h2', { id: 'placement-heading' }, 'Where it runs'), placement),
        notifications,
        h('section', { class: 'card', 'aria-labelledby': 'warnings-heading' }, h('h2', { id: 'warnings-heading' }, 'Advisor'), warnings))));

  let job = null;
  let lastState = null;
  let eventCount = -1;
  let stopped = false;
  const stops = [];

  // ---- job, events
  const renderJob = () => {
    heading.textContent = `${job.name || 'Job'} #${job.id}`;
    document.title = `${job.name || 'Job'} #${job.id} · tpujobs`;
    fill(badge, stateBadge(job.state));
    badge.setAttribute('data-state', job.state);
    cancelButton.disabled = isTerminal(job.state);
    if (lastState && lastState !== job.state) announce(`Job ${job.id} is now ${job.state}`);
    lastState = job.state;

    const progress = job.progress || {};
    const metrics = job.metrics || {};
    fill(overview,
      h('h2', { id: 'overview-heading' }, 'Overview'),
      h('div', { class: 'overview-progress' }, progressBar(job)),
      h('dl', { class: 'facts columns' },
        fact('Epoch', progress.max_epochs ? `${Math.min(progress.epoch + 1, progress.max_epochs)} / ${progress.max_epochs}` : '—'),
        fact('Samples/s', formatNumber(progress.samples_per_sec ?? metrics.samples_per_sec, 3)),
        fact('Loss', formatNumber(metrics.loss)),
        fact('Val loss', formatNumber(metrics.val_loss)),
        fact('Val accuracy', metrics.val_accuracy !== undefined ? `${(metrics.val_accuracy * 100).toFixed(1)}%` : '—'),
        fact('Runs on', describePlacement(job)),
        fact('Priority', job.priority ?? 0),
        fact('Tenant', job.tenant || '—'),
        fact('Attempt', `${(job.attempt ?? 0) + 1} of ${(job.max_retries ?? 0) + 1}`),
        fact('Submitted', h('time', { datetime: job.created_at, title: job.created_at }, formatAge(job.created_at))),
        fact('Ran for', job.started_at
          ? formatDuration(((job.finished_at ? Date.parse(job.finished_at) : Date.now()) - Date.parse(job.started_at)) / 1000)
          : '—'),
        job.array ? fact('Job array', h('a', { href: `#/jobs?array=${job.array.id}` },
          `#${job.array.id}, child ${job.array.index}: ${JSON.stringify(job.array.values)}`)) : null,
        fact('Labels', Object.keys(job.labels || {}).length
          ? Object.entries(job.labels).map(([k, v]) => h('span', { class: 'label-chip' }, `${k}=${v}`)) : '—')));

    waiting.hidden = job.state !== 'QUEUED';
    if (!waiting.hidden) {
      fill(waiting,
        h('h2', { id: 'waiting-heading' }, 'Waiting in the queue'),
        h('dl', { class: 'facts' },
          fact('Queue position', job.queue_position ?? '—'),
          fact('Pending reason', job.pending_reason
            ? [h('strong', {}, job.pending_reason), ` — ${PENDING_REASONS[job.pending_reason] || ''}`] : '—'),
          job.pending_detail ? fact('Why', job.pending_detail) : null,
          job.preempted_by ? fact('Preempted by', h('a', { href: `#/jobs/${job.preempted_by}` },
            `job ${job.preempted_by}`)) : null,
          job.priority_parts ? fact('Priority', `${job.priority_parts.effective.toFixed(3)} ` +
            `(base ${job.priority_parts.base} + fair share ${job.priority_parts.fair_share.toFixed(3)})`) : null,
          (job.spec?.depends_on || []).length
            ? fact('Depends on', job.spec.depends_on.map((d) =>
              h('span', { class: 'label-chip' }, h('a', { href: `#/jobs/${d.job}` }, `job ${d.job}`),
                ` ${d.condition || 'succeeded'}`)))
            : null,
          fact('Estimated start', job.estimated_start ? formatTime(job.estimated_start) : 'unknown')));
    }
    failure.hidden = !job.error;
    if (job.error) {
      fill(failure,
        h('h2', { id: 'failure-heading' }, job.state === 'CANCELLED' ? 'Cancelled' : 'Why it failed'),
        h('p', {}, h('code', { class: 'error-type' }, job.error.type), ' ', job.error.message),
        job.error.hint ? h('p', { class: 'hint' }, h('strong', {}, 'Hint: '), job.error.hint) : null);
    }
    renderPlacement();
    const list = job.warnings || [];
    fill(warnings, list.length
      ? h('ul', { class: 'warnings' }, list.map((w) => h('li', {}, warningText(w))))
      : h('p', { class: 'muted' }, 'No warnings.'));
  };

  const renderPlacement = () => {
    const allocation = job.allocation;
    if (!allocation) {
      fill(placement, h('p', { class: 'muted' }, isTerminal(job.state) ? 'It holds no cores.' : 'Not placed yet.'));
      return;
    }
    if (allocation.accelerator === 'cpu') {
      fill(placement, h('p', {}, 'On the host CPU (no TPU cores).'));
      return;
    }
    const byHost = new Map();
    for (const core of allocation.cores || []) byHost.set(core.host, [...(byHost.get(core.host) || []), core.core]);
    // A slice spanning agents (DESIGN §9): each part is `hosts` consecutive hosts from `first_host`.
    const parts = allocation.slice?.parts || [];
    fill(placement,
      h('p', {}, `${allocation.cores.length} ${allocation.generation || ''} cores`,
        allocation.accelerator_type ? ` (${allocation.accelerator_type})` : '',
        isTerminal(job.state) ? ', released' : ''),
      parts.length ? h('p', {}, `One slice across ${parts.length} agents:`) : null,
      parts.length ? h('ul', { class: 'slice-parts', 'aria-label': 'Slice parts by agent' }, parts.map((part) => h('li',
        { 'data-agent': part.agent, title: `agent ${part.agent}, epoch ${part.epoch}` },
        h('span', { class: 'agent-chip' }, part.agent), ' ',
        (allocation.hosts || []).slice(part.first_host, part.first_host + part.hosts).join(', '),
        h('span', { class: 'muted small' }, part.hosts === 1
          ? ` (host ${part.first_host + 1} of ${(allocation.hosts || []).length})`
          : ` (hosts ${part.first_host + 1}–${part.first_host + part.hosts} of ${(allocation.hosts || []).length})`)))) : null,
      h('ul', { class: 'placement' }, [...byHost].map(([host, cores]) => h('li', {},
        h('span', { class: 'host-name' }, host),
        h('span', { class: 'mini-cores', 'aria-label': `cores ${cores.join(', ')}` },
          cores.map((c) => h('span', { class: 'mini-core', style: { background: jobColour(job.id) }, title: `core ${c}` })))))),
      h('p', {}, h('a', { href: '#/pool' }, 'See the pool')));
  };

  const renderEvents = (events) => {
    if (events.length === eventCount) return;
    eventCount = events.length;
    fill(timeline, events.map((e) => h('li', { class: `event to-${(e.to || '').toLowerCase()}` },
      h('div', { class: 'event-head' }, stateBadge(e.to),
        h('time', { datetime: e.at, title: e.at }, formatTime(e.at))),
      h('p', { class: 'reason' }, e.reason || ''))));
  };

  const refresh = async () => {
    if (stopped) return;
    const [next, events] = await Promise.all([getJob(id), jobEvents(id)]);
    notice.replaceChildren();
    job = next;
    renderJob();
    renderEvents(events.events || []);
    if (isTerminal(job.state)) {
      stopJobPolling();
      loadXlaReport();
    }
  };
  const onError = (error) => {
    if (error instanceof ApiError && error.status === 404) {
      stopJobPolling();
      fill(notice, h('p', { class: 'error-note', role: 'alert' }, `There is no job #${id}.`));
    } else {
      fill(notice, errorNote(error));
    }
  };
  const stopJobPolling = poll(refresh, 1000, onError);
  stops.push(stopJobPolling);

  // ---- notifications (spec.notify): each delivery and its attempts, read
  // until the job has ended and no delivery is pending any more.
  let notificationsDone = false;
  const renderAttempt = (a) => h('li', {},
    h('time', { datetime: a.at, title: a.at }, formatTime(a.at)), ' ',
    a.status_code !== null && a.status_code !== undefined ? `HTTP ${a.status_code}` : 'no answer',
    a.error ? ` — ${a.error}` : '', h('span', { class: 'muted small' }, ` ${Math.round(a.duration_ms)} ms`));
  const refreshNotifications = async () => {
    if (notificationsDone || !job) return;
    if (!job.spec || !job.spec.notify) {
      notificationsDone = isTerminal(job.state);
      return;
    }
    const answer = await jobNotifications(id);
    const list = answer.notifications || [];
    notifications.hidden = false;
    fill(notifications,
      h('h2', { id: 'notifications-heading' }, 'Notifications'),
      h('p', { class: 'muted small' }, `${(job.spec.notify.events || ['finished']).join(', ')} → `,
        h('code', {}, job.spec.notify.url)),
      list.length
        ? h('ul', { class: 'notifications' }, list.map((n) => h('li', { class: `notification ${n.status}`, 'data-event': n.event },
          h('div', {}, h('strong', {}, n.event), ` (${n.state}): `, h('span', { class: 'delivery-status' }, n.status),
            n.status === 'pending' && n.next_attempt_at ? `, next attempt ${formatTime(n.next_attempt_at)}` : ''),
          h('ol', { class: 'attempts' }, (n.attempts || []).map(renderAttempt)))))
        : h('p', { class: 'muted' }, 'Nothing sent yet.'));
    notificationsDone = isTerminal(job.state) && list.every((n) => n.status !== 'pending');
  };
  stops.push(poll(refreshNotifications, 1500, () => {}));

  // ---- metrics → charts
  const byStep = new Map();
  let metricsAfter = 0;
  let metricsDone = false;
  const refreshMetrics = async () => {
    if (metricsDone) return;
    const page = await jobMetrics(id, metricsAfter);
    for (const point of page.points || []) {
      const row = byStep.get(point.step) || {};
      Object.assign(row, point.values);
      byStep.set(point.step, row);
    }
    if (page.next_after) metricsAfter = page.next_after;
    if ((page.points || []).length) {
      noMetrics.hidden = true;
      charts.hidden = false;
      drawCharts();
    } else if (job && isTerminal(job.state) && byStep.size === 0) {
      noMetrics.textContent = 'This job logged no metrics.';
    }
    // One more read after the job ends picks up the final validation point.
    if (job && isTerminal(job.state) && (page.points || []).length === 0) metricsDone = true;
  };
  const drawCharts = () => {
    const steps = [...byStep.keys()].sort((a, b) => a - b);
    const column = (name) => steps.map((s) => (byStep.get(s)[name] ?? null));
    lossChart.setData([steps, column('loss'), column('val_loss')]);
    accuracyChart.setData([steps, column('val_accuracy')]);
    throughputChart.setData([steps, column('samples_per_sec')]);
  };
  stops.push(poll(refreshMetrics, 1000, () => {}));

  // ---- log
  // A fast job streams hundreds of lines a second: they are buffered and
  // drawn once per frame, as one text node per batch, so that the page
  // lays the log out once per frame rather than once per line.
  let lineCount = 0;
  let lastSeq = 0;
  let pending = [];
  let frame = 0;
  const batchLines = [];  // lines in each text node of logView, oldest first
  let shownLines = 0;
  const flushLog = () => {
    frame = 0;
    if (pending.length === 0) return;
    const batch = pending.length > MAX_LOG_LINES ? pending.slice(-MAX_LOG_LINES) : pending;
    pending = [];
    logView.append(batch.join(''));
    batchLines.push(batch.length);
    shownLines += batch.length;
    while (shownLines - batchLines[0] >= MAX_LOG_LINES) {
      shownLines -= batchLines.shift();
      logView.firstChild.remove();
    }
    logStatus.textContent = `${lastSeq} lines, live`;
    if (followBox.checked) logView.scrollTop = logView.scrollHeight;
  };
  const stopLogs = followLogs(id, 0, ({ seq, line }) => {
    lineCount += 1;
    lastSeq = seq;
    pending.push(`${line}\n`);
    if (pending.length > 2 * MAX_LOG_LINES) pending = pending.slice(-MAX_LOG_LINES);
    if (!frame) frame = requestAnimationFrame(flushLog);
  }, (state) => {
    cancelAnimationFrame(frame);
    flushLog();
    logStatus.textContent = `${lineCount} lines, complete (${state})`;
    if (lineCount === 0) logView.textContent = '(no output)';
  });
  stops.push(() => cancelAnimationFrame(frame));
  stops.push(stopLogs);

  // ---- XLA report
  let xlaLoaded = false;
  const loadXlaReport = async () => {
    if (xlaLoaded) return;
    xlaLoaded = true;
    try {
      const report = await xlaReport(id);
      fill(xla, h('pre', { class: 'report', tabindex: '0', 'aria-label': 'XLA metrics report' }, report));
    } catch (error) {
      fill(xla, h('p', { class: 'muted' }, error.message));
    }
  };

  cancelButton.addEventListener('click', async () => {
    if (!window.confirm(`Cancel job #${id}${job && job.name ? ` (${job.name})` : ''}?`)) return;
    cancelButton.disabled = true;
    try {
      await cancelJob(id);
      announce(`Cancelling job ${id}`);
      fill(notice, h('p', { class: 'info-note' }, 'Cancellation requested: it takes effect within one training step.'));
    } catch (error) {
      fill(notice, h('p', { class: 'error-note', role: 'alert' }, error.message));
    }
  });

  return () => {
    stopped = true;
    for (const stop of stops) stop();
    lossChart.destroy();
    accuracyChart.destroy();
    throughputChart.destroy();
  };
}

function fact(term, value) {
  return h('div', {}, h('dt', {}, term), h('dd', {}, value));
}
