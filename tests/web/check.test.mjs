// The Submit page's "Check a script" in headless Chromium: a script dropped
// on it (and its requirements pasted) is checked by POST /v1/checks, and
// each finding is shown beside its line, with the same text as `tpujobs
// check --format json` gives for the same files.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, test } from 'node:test';
import { launchBrowser, screenshots, startService } from './harness.mjs';

const SCRIPT = `import argparse
from lightning.pytorch import Trainer as T

CORES = 3
trainer = T(accelerator="tpu", devices=CORES, precision="16-mixed")
`;
const REQUIREMENTS = 'torch==2.1.0\ntorch_xla[tpu]==2.2.0\nlightning==2.1.3\n';

// What the command line says for the same files.
function commandFindings() {
  const dir = mkdtempSync(join(tmpdir(), 'tpujobs-web-check-'));
  try {
    writeFileSync(join(dir, 'train.py'), SCRIPT);
    writeFileSync(join(dir, 'requirements.txt'), REQUIREMENTS);
    let out;
    try {
      out = execFileSync(process.env.TPUJOBS_BIN, ['check', '--format', 'json', '--accelerator-type', 'v3-8',
        '--requirements', 'requirements.txt', 'train.py'], { cwd: dir, encoding: 'utf8' });
    } catch (error) {
      assert.equal(error.status, 2, 'the command finds errors');
      out = error.stdout;
    }
    return JSON.parse(out).findings;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

let service;
let browser;
beforeEach(async () => {
  service = await startService();
  browser = await launchBrowser();
});
afterEach(async () => {
  const pageErrors = browser ? browser.errors : [];
  await browser?.close();
  await service?.stop();
  assert.deepEqual(pageErrors, [], 'the page threw no JavaScript errors');
});

test('a dropped train.py is checked and each finding shows beside its line', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/submit`);
  await page.getByRole('heading', { name: 'Check a script' }).waitFor();
  const script = page.locator('#script-text');
  const dataTransfer = await page.evaluateHandle((text) => {
    const transfer = new DataTransfer();
    transfer.items.add(new File([text], 'train.py', { type: 'text/x-python' }));
    return transfer;
  }, SCRIPT);
  await script.dispatchEvent('drop', { dataTransfer });
  await page.waitForFunction((text) => document.querySelector('#script-text').value === text, SCRIPT);
  await page.locator('#requirements-text').fill(REQUIREMENTS);
  await page.getByRole('button', { name: 'Check script' }).click();
  await page.locator('#script-findings .verdict.invalid').waitFor();

  const expected = commandFindings();
  const onScript = expected.filter((f) => f.path === 'train.py');
  assert.deepEqual(onScript.map((f) => [f.line, f.rule]), [[5, 'trainer.devices'], [5, 'trainer.precision']]);
  // Line 5 of the annotated script carries both findings, with the command's texts.
  const line5 = page.locator('.annotated > li[data-line="5"]');
  assert.match(await line5.locator('pre').innerText(), /trainer = T\(accelerator="tpu", devices=CORES/);
  const shown = await line5.locator('.finding').evaluateAll((items) => items.map((item) => [item.dataset.rule, item.querySelector('.message').innerText]));
  assert.equal(shown.length, 2);
  for (const [index, finding] of onScript.entries()) {
    assert.equal(shown[index][0], finding.rule);
    assert.ok(shown[index][1].includes(finding.message), `${shown[index][1]} shows ${finding.message}`);
  }
  assert.equal(await page.locator('.annotated > li.has-finding').count(), 1, 'no other line has a finding');
  // The requirement's finding (torch 2.1 with torch_xla 2.2) is listed under Requirements.
  const requirement = expected.find((f) => f.path === 'requirements.txt');
  assert.equal(requirement.rule, 'environment.torch_xla');
  assert.match(await page.locator('#script-findings').innerText(), /Requirements/);
  assert.ok((await page.locator('#script-findings').innerText()).includes(requirement.message));
  await screenshots(page, 'submit-check-script');

  // Corrected, the script has no error.
  await script.fill(SCRIPT.replace('CORES = 3', 'CORES = 8').replace('16-mixed', 'bf16-true'));
  await page.locator('#requirements-text').fill('');
  await page.getByRole('button', { name: 'Check script' }).click();
  await page.locator('#script-findings .verdict.valid').waitFor();
  assert.equal(await page.locator('.annotated > li.has-finding').count(), 0);
});
