// Browser tests of the web UI: a real `tpujobs serve` per test, headless
// Chromium, and what a user would check on each page. Screenshots of every
// page at 1280×800 and 390×844 land in $TPUJOBS_SCREENSHOTS.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { dirname, join, resolve } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { launchBrowser, screenshots, startService, submitViaApi } from './harness.mjs';

const examples = resolve(dirname(fileURLToPath(import.meta.url)), '../../examples');
const digits = JSON.parse(readFileSync(join(examples, 'digits-mlp.json'), 'utf8'));
// A job that trains until the test ends it (Lightning's max_epochs=-1).
const longDigits = (name, trainer = {}) => ({
  ...digits, name, trainer: { ...digits.trainer, max_epochs: -1, ...trainer }, expect: undefined, timeout: '30m',
});

let service;
let browser;
beforeEach(async () => {
  service = await startService();
  browser = await launchBrowser();
});
afterEach(async () => {
  const pageErrors = browser ? browser.errors : [];
  await browser?.close();
  browser = undefined;
  const running = service;
  service = undefined;
  await running?.stop();
  assert.deepEqual(pageErrors, [], 'the page threw no JavaScript errors');
});

const dataState = (page) => page.locator('.state-holder').getAttribute('data-state');
const chartPoints = async (page, id) => Number(await page.locator(`#${id}`).getAttribute('data-points'));

test('a job submitted from the form reaches SUCCEEDED with live charts, log and XLA report', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/submit`);
  await page.getByRole('heading', { name: 'Submit a job' }).waitFor();
  const editor = page.getByLabel('Job spec (JSON)', { exact: true });
  assert.match(await editor.inputValue(), /"name": "digits-mlp"/, 'the editor starts from the first example');

  await page.getByRole('button', { name: 'Validate' }).click();
  await page.locator('.verdict.valid').waitFor();
  const results = page.locator('#results');
  assert.match(await results.innerText(), /HBM estimate per core \(v3\)/);
  assert.match(await results.innerText(), /SMALL_BATCH/, 'the advisor warns about the per-core batch of 8');
  await screenshots(page, 'submit-valid');

  await page.getByRole('button', { name: 'Submit job' }).click();
  await page.waitForURL(/#\/jobs\/\d+$/);
  const id = Number(new URL(page.url()).hash.split('/').pop());
  await page.getByRole('heading', { name: `digits-mlp #${id}` }).waitFor();

  await page.waitForFunction(() => document.querySelector('.state-holder')?.dataset.state === 'SUCCEEDED', null, { timeout: 120_000 });
  await page.waitForFunction(() => Number(document.querySelector('#chart-accuracy')?.dataset.points) > 1, null, { timeout: 10_000 });
  assert.ok(await chartPoints(page, 'chart-loss') > 1, 'the loss chart has more than one point');
  assert.ok(await chartPoints(page, 'chart-throughput') > 1, 'the throughput chart has more than one point');
  assert.equal(await page.locator('#chart-loss canvas').count(), 1, 'uPlot drew the loss chart');

  const timeline = await page.locator('.timeline').innerText();
  for (const state of ['QUEUED', 'STARTING', 'RUNNING', 'SUCCEEDED']) assert.match(timeline, new RegExp(state));
  assert.match(timeline, /Training finished/, 'the timeline gives reasons');
  await page.waitForFunction(() => /complete/.test(document.querySelector('#log-status')?.textContent || ''));
  assert.ok((await page.locator('#log').innerText()).split('\n').length > 5, 'the log shows the run');
  const report = page.locator('pre.report');
  await report.waitFor();
  assert.match(await report.innerText(), /Metric: CompileTime/);
  assert.equal(await page.getByRole('button', { name: 'Cancel job' }).isDisabled(), true, 'a finished job cannot be cancelled');
  assert.match(await page.locator('#placement-heading + *').innerText(), /v3-32-h\d/, 'it shows where it ran');
  await screenshots(page, 'job-succeeded');

  await page.getByRole('link', { name: 'Jobs', exact: true }).first().click();
  const row = page.locator(`tr[data-job="${id}"]`);
  await row.waitFor();
  assert.equal(await row.getAttribute('data-state'), 'SUCCEEDED');
  assert.match(await row.innerText(), /digits-mlp/);
  assert.match(await row.innerText(), /440 \/ 440/, 'the progress shows every step done');
  await screenshots(page, 'jobs');

  // Filters: a state with no jobs empties the table; the job's own state and label find it.
  await page.getByLabel('State', { exact: true }).selectOption('RUNNING');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-job]').length === 0);
  assert.match(page.url(), /state=RUNNING/);
  await page.getByLabel('State', { exact: true }).selectOption('SUCCEEDED');
  await page.getByLabel('Label', { exact: true }).fill('example=digits');
  await page.getByRole('button', { name: 'Filter', exact: true }).click();
  await page.locator(`tr[data-job="${id}"]`).waitFor();
  await page.getByLabel('Label', { exact: true }).fill('example=nothing');
  await page.getByLabel('Label', { exact: true }).press('Enter');
  await page.waitForFunction(() => document.querySelectorAll('tr[data-job]').length === 0);
});

test('devices: 3 is shown beside trainer.devices with Lightning\'s message and hint', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/submit`);
  const editor = page.getByLabel('Job spec (JSON)', { exact: true });
  const text = (await editor.inputValue()).replace('"devices": 8', '"devices": 3');
  await editor.fill(text);
  await page.getByRole('button', { name: 'Validate' }).click();

  const problem = page.locator('.problem[data-field="trainer.devices"]');
  await problem.waitFor();
  assert.match(await problem.innerText(), /`devices` can only be 'auto', 1, 8 or \[<0-7>\] for TPUs\. Got 3/);
  assert.match(await problem.innerText(), /Hint: Use `devices: 8`/);
  const devicesLine = text.split('\n').findIndex((line) => line.includes('"devices": 3')) + 1;
  assert.match(await problem.innerText(), new RegExp(`line ${devicesLine}\\b`));
  const marked = page.locator('.gutter .line.has-problem');
  assert.equal(await marked.count(), 1, 'one line is marked');
  assert.equal((await marked.innerText()).replace(/\D/g, ''), String(devicesLine), 'the marker sits on the devices line');
  assert.equal(await editor.getAttribute('aria-invalid'), 'true');

  // Going to the field selects it in the editor.
  await problem.getByRole('button').click();
  const selection = await editor.evaluate((e) => e.value.slice(e.selectionStart, e.selectionEnd));
  assert.equal(selection, '"devices": 3');
  await screenshots(page, 'submit-problems');

  // Submitting the same spec is refused the same way and stays on the page.
  await page.getByRole('button', { name: 'Submit job' }).click();
  await page.locator('.verdict.invalid').waitFor();
  assert.match(page.url(), /#\/submit$/);
  const jobs = await (await fetch(`${service.url}/v1/jobs`)).json();
  assert.equal(jobs.jobs.length, 0, 'nothing was created');
});

test('a running job is cancelled from its page; a job waiting behind it shows why', async () => {
  const { page } = browser;
  const slice = await submitViaApi(service.url, longDigits('whole-pool', { num_nodes: 4 }));
  const waiting = await submitViaApi(service.url, longDigits('behind-it'));

  await page.goto(`${service.url}/#/jobs/${waiting.id}`);
  await page.getByRole('heading', { name: 'Waiting in the queue' }).waitFor();
  // The scheduler's first pass over it gives its place and reason: until then
  // the page shows none, and its next poll shows them.
  await page.waitForFunction(() => /Queue position\s*1/.test(document.querySelector('.waiting')?.innerText),
    null, { timeout: 30_000 });
  const queue = await page.locator('.waiting').innerText();
  assert.match(queue, /Pending reason\s*Resources/);
  await screenshots(page, 'job-queued');

  await page.goto(`${service.url}/#/jobs/${slice.id}`);
  await page.waitForFunction(() => document.querySelector('.state-holder')?.dataset.state === 'RUNNING', null, { timeout: 60_000 });
  await page.waitForFunction(() => Number(document.querySelector('#chart-loss')?.dataset.points) > 1, null, { timeout: 30_000 });
  // The slice logs hundreds of lines a second; the page keeps up and stays responsive.
  await page.waitForFunction(() => /lines, live/.test(document.querySelector('#log-status')?.textContent), null, { timeout: 10_000 });
  const before = Date.now();
  const shown = await page.evaluate(() => document.querySelector('#log').textContent.split('\n').length);
  assert.ok(Date.now() - before < 1000, 'the page answers within a second while the log streams');
  assert.ok(shown > 10, 'the log shows the streamed lines');
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await page.waitForFunction(() => document.querySelector('.state-holder')?.dataset.state === 'CANCELLED', null, { timeout: 30_000 });
  assert.match(await page.locator('.timeline').innerText(), /CANCELLED/);
  assert.equal(await page.getByRole('button', { name: 'Cancel job' }).isDisabled(), true);
  await screenshots(page, 'job-cancelled');

  // The freed pool lets the waiting job start; its page follows without a reload.
  await page.goto(`${service.url}/#/jobs/${waiting.id}`);
  await page.waitForFunction(() => ['STARTING', 'RUNNING'].includes(document.querySelector('.state-holder')?.dataset.state),
    null, { timeout: 30_000 });
  await page.getByRole('button', { name: 'Cancel job' }).click();
  await page.waitForFunction(() => document.querySelector('.state-holder')?.dataset.state === 'CANCELLED', null, { timeout: 30_000 });
});

test('draining a host on the pool page changes its state; recover brings it back', async () => {
  const { page } = browser;
  const running = await submitViaApi(service.url, longDigits('on-h0'));
  await page.goto(`${service.url}/#/pool`);
  const host = page.locator('[data-host="v3-32-h1"]');
  await host.waitFor();
  assert.equal(await host.getAttribute('data-health'), 'healthy');
  assert.equal(await page.locator('.host').count(), 4, 'a v3-32 pool has four hosts');
  assert.equal(await host.locator('.core').count(), 8);
  // One process is a one-member cluster: its in-process agent `local` holds every host.
  assert.equal(await page.locator('#agents-section').isVisible(), true, 'the agents are listed');
  assert.equal(await page.locator('.agent-chip').count(), 4, 'each host names its agent');
  assert.match(await host.locator('.agent-chip').innerText(), /^agent local$/);

  // The running job colours its cores, and a core tells which job it holds.
  const busy = page.locator(`.core[data-job="${running.id}"]`);
  await busy.first().waitFor({ timeout: 30_000 });
  assert.equal(await busy.count(), 8);
  await busy.first().focus();
  assert.match(await page.locator('#core-detail').innerText(), new RegExp(`job #${running.id} on-h0`));

  await page.getByRole('button', { name: 'Drain v3-32-h1' }).click();
  await page.waitForFunction(() => document.querySelector('[data-host="v3-32-h1"]')?.dataset.health === 'draining');
  assert.match(await host.locator('.badge').innerText(), /draining/);
  assert.equal(await page.getByRole('button', { name: 'Drain v3-32-h1' }).isDisabled(), true);
  const utilisationPoints = await (async () => {
    await page.waitForFunction(() => Number(document.querySelector('#chart-utilisation')?.dataset.points) > 1);
    return Number(await page.locator('#chart-utilisation').getAttribute('data-points'));
  })();
  assert.ok(utilisationPoints > 1, 'utilisation is charted over time');
  await screenshots(page, 'pool');

  await page.getByRole('button', { name: 'Recover v3-32-h1' }).click();
  await page.waitForFunction(() => document.querySelector('[data-host="v3-32-h1"]')?.dataset.health === 'healthy');
  await fetch(`${service.url}/v1/jobs/${running.id}/cancel`, { method: 'POST' });
});

test('a sweep shows as a job array with its values and metrics side by side; the pool page charts usage', async () => {
  const { page } = browser;
  const response = await fetch(`${service.url}/v1/jobs`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ ...digits, name: 'grid', expect: undefined, trainer: { ...digits.trainer, max_epochs: 1 },
      sweep: { 'optimizer.lr': [0.001, 0.01] } }),
  });
  assert.equal(response.status, 201);
  const answer = await response.json();
  assert.equal(answer.array.size, 2);
  await page.goto(`${service.url}/#/jobs?array=${answer.array.id}`);
  await page.getByRole('heading', { name: `Job array #${answer.array.id}` }).waitFor();
  await page.waitForFunction(() => document.querySelectorAll('tr[data-state="SUCCEEDED"]').length === 2, null,
    { timeout: 60_000 });
  const rows = page.locator('tbody tr');
  assert.match(await rows.nth(0).innerText(), /optimizer\.lr=0\.001/);
  assert.match(await rows.nth(1).innerText(), /optimizer\.lr=0\.01/);
  assert.match(await rows.nth(0).innerText(), /val_accuracy=/, 'the final metrics are shown');
  await screenshots(page, 'job-array');

  await page.goto(`${service.url}/#/pool`);
  const tenant = page.locator('#usage-chart tr[data-group="default"]');
  await tenant.waitFor({ timeout: 30_000 });
  assert.match(await tenant.innerText(), /2 jobs/);
});

// A cluster's pool (DESIGN §9) as `GET /v1/pool` answers it (JobManager::cluster_pool_view):
// agent-a alive with a-h0 and a-h1, agent-b lost (its hosts unreachable) with
// b-h0 and b-h1; job 41 is one v4-16 slice on a-h1 and b-h0 (led by agent-a;
// only agent-a lists it in running_jobs here, as the service did before it
// listed a slice under each agent of its parts: the page also counts the
// jobs on an agent's own hosts), job 42 runs on a-h0 alone.
function clusterFixture(now) {
  const ago = (seconds) => new Date(now - seconds * 1000).toISOString().replace(/\.\d+Z$/, 'Z');
  const host = (name, agent, agentState, job = null) => {
    const cores = [0, 1, 2, 3].map((core) => (job ? { core, job: job.id, job_name: job.name } : { core, job: null }));
    const inUse = job ? 4 : 0;
    return { name, agent, agent_state: agentState, generation: 'v4', health: agentState === 'alive' ? 'healthy' : 'unreachable',
      devices: 4, hbm_bytes_per_device: 34359738368, cores_in_use: inUse, utilization: inUse / 4, cores };
  };
  const slice = { id: 41, name: 'big-slice' };
  const small = { id: 42, name: 'small' };
  const pool = {
    hosts: [host('a-h0', 'agent-a', 'alive', small), host('a-h1', 'agent-a', 'alive', slice),
      host('b-h0', 'agent-b', 'lost', slice), host('b-h1', 'agent-b', 'lost')],
    agents: [
      { name: 'agent-a', state: 'alive', epoch: 3, workers: 4, last_heartbeat: ago(2), hosts: ['a-h0', 'a-h1'], running_jobs: [41, 42] },
      { name: 'agent-b', state: 'lost', epoch: 5, workers: 2, last_heartbeat: ago(95), hosts: ['b-h0', 'b-h1'], running_jobs: [] },
    ],
    total_cores: 16, used_cores: 12, healthy_cores: 8, utilization: 0.75, queued_jobs: 0, running_jobs: 2, cpu_jobs_running: 0,
  };
  const cores = ['a-h1', 'b-h0'].flatMap((name) => [0, 1, 2, 3].map((core) => ({ host: name, core })));
  const job = {
    id: 41, name: 'big-slice', state: 'RUNNING', tenant: 'default', priority: 0, attempt: 0, max_retries: 0, labels: {},
    created_at: ago(60), started_at: ago(50), spec: { name: 'big-slice' }, warnings: [],
    progress: { epoch: 0, max_epochs: 3, step: 10, total_steps: 300 },
    allocation: { generation: 'v4', accelerator_type: 'v4-16', hosts: ['a-h1', 'b-h0'], cores, agent: 'agent-a',
      slice: { placement: 7, parts: [{ agent: 'agent-a', epoch: 3, first_host: 0, hosts: 1 }, { agent: 'agent-b', epoch: 5, first_host: 1, hosts: 1 }] } },
  };
  const events = [
    { to: 'QUEUED', at: ago(60), reason: 'Submitted' },
    { to: 'STARTING', at: ago(55), reason: 'Placed across agents: 1 host(s) on agent agent-a, 1 host(s) on agent agent-b (8 cores)' },
    { to: 'RUNNING', at: ago(50), reason: 'Training started' },
  ];
  return { pool, job, events };
}

// Answers the page's pool and job 41 requests from the fixture; the real
// service serves the page itself.
async function serveCluster(page) {
  const fixture = clusterFixture(Date.now());
  const answers = {
    '/v1/pool': fixture.pool,
    '/v1/jobs/41': fixture.job,
    '/v1/jobs/41/events': { events: fixture.events },
    '/v1/jobs/41/metrics': { points: [] },
  };
  await page.route((url) => url.pathname === '/v1/pool' || url.pathname.startsWith('/v1/jobs/41'), (route) => {
    const path = new URL(route.request().url()).pathname;
    if (path === '/v1/jobs/41/logs') {
      return route.fulfill({ status: 200, contentType: 'text/event-stream', body: 'event: log\ndata: {"seq":1,"line":"epoch 0"}\n\n' });
    }
    if (!(path in answers)) return route.fulfill({ status: 404, contentType: 'application/problem+json', body: '{"title":"Not Found"}' });
    return route.fulfill({ status: 200, contentType: 'application/json', body: JSON.stringify(answers[path]) });
  });
}

test('a cluster\'s pool page lists its agents, marks a lost agent\'s hosts unreachable and a slice across agents', async () => {
  const { page } = browser;
  await serveCluster(page);
  await page.goto(`${service.url}/#/pool`);
  await page.getByRole('heading', { name: 'Agents' }).waitFor();
  const agentA = page.locator('tr[data-agent="agent-a"]');
  const agentB = page.locator('tr[data-agent="agent-b"]');
  await agentA.waitFor();
  assert.equal(await page.locator('#agents-count').innerText(), '2 agents, 1 lost');
  assert.equal(await agentA.locator('.badge').innerText(), 'alive');
  assert.equal(await agentB.locator('.badge').innerText(), 'lost');
  const colour = (row) => row.locator('.badge').evaluate((badge) => getComputedStyle(badge).backgroundColor);
  assert.notEqual(await colour(agentA), await colour(agentB), 'alive and lost look different');
  assert.match(await agentA.innerText(), /a-h0, a-h1/);
  assert.match(await agentB.innerText(), /b-h0, b-h1/);
  assert.match(await agentB.locator('td[data-label="Workers"]').innerText(), /^2$/);

  // The last heartbeat is an age that keeps growing without a reload.
  const age = agentB.locator('time');
  assert.match(await age.innerText(), /^1 min 3\d s ago$/);
  const firstAge = await age.innerText();
  await page.waitForFunction((before) => document.querySelector('tr[data-agent="agent-b"] time')?.textContent !== before, firstAge);

  // Running jobs link to their pages; agent-b runs its part of job 41 though agent-a leads it.
  const links = async (row) => row.locator('a').evaluateAll((all) => all.map((a) => `${a.textContent} ${a.getAttribute('href')}`));
  assert.deepEqual(await links(agentA), ['#41 big-slice #/jobs/41', '#42 small #/jobs/42']);
  assert.deepEqual(await links(agentB), ['#41 big-slice #/jobs/41']);

  // Each host names its agent; the lost agent's hosts are unreachable.
  for (const [name, agent, health] of [['a-h0', 'agent-a', 'healthy'], ['a-h1', 'agent-a', 'healthy'],
    ['b-h0', 'agent-b (lost)', 'unreachable'], ['b-h1', 'agent-b (lost)', 'unreachable']]) {
    const tile = page.locator(`[data-host="${name}"]`);
    assert.equal(await tile.getAttribute('data-health'), health, name);
    assert.equal(await tile.locator('.badge').innerText(), health, name);
    assert.equal(await tile.locator('.agent-chip').innerText(), `agent ${agent}`, name);
  }
  assert.equal(await page.getByRole('button', { name: 'Recover b-h0' }).isDisabled(), true, 'it comes back with its agent');
  assert.equal(await page.getByRole('button', { name: 'Fail b-h0' }).isDisabled(), false);

  // The slice's cores on both agents' hosts are marked as one slice; job 42's are not.
  assert.equal(await page.locator('.core.spans-agents[data-job="41"]').count(), 8);
  assert.equal(await page.locator('[data-host="b-h0"] .core.spans-agents').count(), 4);
  assert.equal(await page.locator('.core.spans-agents[data-job="42"]').count(), 0);
  assert.match(await page.locator('.legend li[data-job="41"]').innerText(), /one slice across agent-a, agent-b/);
  await page.locator('#core-b-h0-2').focus();
  assert.match(await page.locator('#core-detail').innerText(), /b-h0 core 2: job #41 big-slice, one slice across agent-a, agent-b/);
  await screenshots(page, 'pool-cluster');

  // The job page says which agent runs which hosts.
  await agentB.getByRole('link', { name: '#41 big-slice' }).click();
  await page.getByRole('heading', { name: 'big-slice #41' }).waitFor();
  const parts = page.locator('.slice-parts li');
  await parts.first().waitFor();
  assert.deepEqual(await parts.evaluateAll((all) => all.map((li) => li.textContent)),
    ['agent-a a-h1 (host 1 of 2)', 'agent-b b-h0 (host 2 of 2)']);
  assert.match(await page.locator('#placement-heading + *').innerText(), /One slice across 2 agents/);
  assert.match(await page.locator('.overview').innerText(), /v4-16 slice across 2 agents/);
  await screenshots(page, 'job-slice');
});

test('a job with notify lists its deliveries and their attempts on its page', async () => {
  const { page } = browser;
  // A receiver on loopback that fails the first POST and accepts the rest.
  const received = [];
  const receiver = createServer((request, response) => {
    let body = '';
    request.on('data', (chunk) => { body += chunk; });
    request.on('end', () => {
      received.push({ event: request.headers['x-tpujobs-event'], body });
      response.writeHead(received.length === 1 ? 500 : 200).end('ok');
    });
  });
  await new Promise((done) => receiver.listen(0, '127.0.0.1', done));
  const port = receiver.address().port;
  try {
    await service.stop();
    service = await startService({ args: ['--notify-allow', `127.0.0.1:${port}`] });
    const secret = await fetch(`${service.url}/v1/notifications/secret`, { method: 'POST' });
    assert.equal(secret.status, 201);
    const { id } = await submitViaApi(service.url, {
      ...digits, name: 'hooked', expect: undefined, trainer: { ...digits.trainer, max_epochs: 1 },
      notify: { url: `http://127.0.0.1:${port}/hook`, events: ['started', 'finished'] },
    });
    await page.goto(`${service.url}/#/jobs/${id}`);
    const card = page.locator('#notifications');
    await card.getByRole('heading', { name: 'Notifications' }).waitFor({ timeout: 60_000 });
    await page.waitForFunction(
      () => document.querySelectorAll('#notifications li.notification.delivered').length === 2, null,
      { timeout: 60_000 });
    const started = card.locator('li.notification[data-event="started"]');
    assert.match(await started.innerText(), /HTTP 500/, 'the failed first attempt is listed');
    assert.match(await started.innerText(), /HTTP 200/, 'and the retry that succeeded');
    assert.match(await card.innerText(), new RegExp(`http://127\\.0\\.0\\.1:${port}/hook`));
    assert.equal(received.length, 3);
    await screenshots(page, 'job-notifications');
  } finally {
    receiver.close();
  }
});
