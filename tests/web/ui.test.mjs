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
// A job that would run for minutes: the tests end it.
const longDigits = (name, trainer = {}) => ({
  ...digits, name, trainer: { ...digits.trainer, max_epochs: 50_000, ...trainer }, expect: undefined, timeout: '30m',
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
  const queue = await page.locator('.waiting').innerText();
  assert.match(queue, /Queue position\s*1/);
  assert.match(queue, /Resources/);
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
