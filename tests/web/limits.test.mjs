// The Pool page's limits editor (issue 34): an admin reads a tenant's limits
// in effect, sets some, clears one back to the default, and reads the
// service's refusal of a value out of range field by field. Without tokens
// the service serves everyone as an admin.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, screenshots, startService } from './harness.mjs';

let service;
let browser;
before(async () => {
  service = await startService({ args: ['--default-max-queued', '500'] });
  browser = await launchBrowser();
});
after(async () => {
  const pageErrors = browser ? browser.errors : [];
  await browser?.close();
  await service?.stop();
  assert.deepEqual(pageErrors, [], 'the page threw no JavaScript errors');
});

const stored = async (tenant) => (await fetch(`${service.url}/v1/tenants/${tenant}/limits`)).json();

test('an admin sees a tenant\'s limits on the pool page, sets them and clears one back to the default', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/pool`);
  const section = page.locator('#limits-section');
  await section.waitFor();
  assert.equal(await page.locator('#limits-save').isDisabled(), true, 'nothing to save before a tenant is shown');
  await page.fill('#limits-tenant', 'team-a');
  await page.click('#limits-show');
  await page.locator('#limits-note', { hasText: 'Limits of team-a in effect.' }).waitFor();
  // The service's defaults: serve's flag, the built-in 256, no rates.
  assert.equal(await page.inputValue('#limit-max_queued'), '500');
  assert.equal(await page.inputValue('#limit-max_array_size'), '256');
  assert.equal(await page.inputValue('#limit-submits_per_second'), '');

  await page.fill('#limit-max_queued', '20');
  await page.fill('#limit-submits_per_second', '2.5');
  await page.fill('#limit-submit_burst', '10');
  await page.click('#limits-save');
  await page.locator('#limits-note', { hasText: 'Limits of team-a saved.' }).waitFor();
  let limits = await stored('team-a');
  assert.equal(limits.max_queued, 20);
  assert.equal(limits.submits_per_second, 2.5);
  assert.equal(limits.submit_burst, 10);
  assert.equal(limits.max_array_size, 256);
  assert.equal((await stored('team-b')).max_queued, 500, 'another tenant keeps the defaults');

  // A reload shows what is stored; an emptied field goes back to the default.
  await page.reload();
  await page.fill('#limits-tenant', 'team-a');
  await page.click('#limits-show');
  await page.locator('#limits-note', { hasText: 'in effect' }).waitFor();
  assert.equal(await page.inputValue('#limit-max_queued'), '20');
  assert.equal(await page.inputValue('#limit-submits_per_second'), '2.5');
  await page.fill('#limit-max_queued', '');
  await page.click('#limits-save');
  await page.locator('#limits-note', { hasText: 'saved' }).waitFor();
  assert.equal(await page.inputValue('#limit-max_queued'), '500');
  limits = await stored('team-a');
  assert.equal(limits.max_queued, 500);
  assert.equal(limits.submit_burst, 10);
  await screenshots(page, 'pool-limits');
});

test('a value the service refuses is shown with its field, and nothing is stored', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/pool`);
  await page.fill('#limits-tenant', 'team-c');
  await page.click('#limits-show');
  await page.locator('#limits-note', { hasText: 'in effect' }).waitFor();
  await page.fill('#limit-max_array_size', '2000000000');
  await page.click('#limits-save');
  const refusal = page.locator('#limits-note .error-note');
  await refusal.waitFor();
  assert.match(await refusal.innerText(), /Saving the limits of team-c/);
  assert.match(await refusal.locator('li[data-field="max_array_size"]').innerText(),
    /max_array_size: must be an integer from 0 to 1073741824, or null/);
  assert.equal((await stored('team-c')).max_array_size, 256);
});
