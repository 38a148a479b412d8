// The Pool page on today's Cloud TPUs: a v5litepod-16,v6e-8,v5p-32 pool shows
// each generation's layout; v5p draws as a 3D block of chip layers, v5e as a
// 2D grid, each chip belonging to the host that holds it.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import { launchBrowser, screenshots, startService } from './harness.mjs';

let service;
let browser;
before(async () => {
  service = await startService({ pool: 'v5litepod-16,v6e-8,v5p-32' });
  browser = await launchBrowser();
});
after(async () => {
  const pageErrors = browser ? browser.errors : [];
  await browser?.close();
  await service?.stop();
  assert.deepEqual(pageErrors, [], 'the page threw no JavaScript errors');
});

test('the pool page draws each generation\'s layout, v5p as a 3D block', async () => {
  const { page } = browser;
  await page.goto(`${service.url}/#/pool`);
  const v5p = page.locator('.generation-layout[data-generation="v5p"]');
  await v5p.waitFor();
  assert.equal(await page.locator('.generation-layout').count(), 3);
  assert.equal(await v5p.getAttribute('data-topology'), '2x2x4');
  assert.match(await v5p.locator('h3').innerText(), /v5p: v5p-32, topology 2x2x4 \(hosts of 2x2x1\)/);
  // 16 chips in 4 layers of 2x2; each layer is one 4-chip host.
  assert.equal(await v5p.locator('.chip-layer').count(), 4);
  assert.equal(await v5p.locator('.chip').count(), 16);
  for (let z = 0; z < 4; z += 1) {
    const hosts = await v5p.locator(`.chip-layer[data-z="${z}"] .chip`).evaluateAll((chips) => [...new Set(chips.map((c) => c.dataset.host))]);
    assert.deepEqual(hosts, [`v5p-32-h${z}`]);
  }
  // The layers are drawn one behind the other, shifted: a block, not a row.
  const front = await v5p.locator('.chip-layer[data-z="0"]').boundingBox();
  const back = await v5p.locator('.chip-layer[data-z="3"]').boundingBox();
  assert.ok(back.x > front.x && back.y < front.y, `layer 3 sits behind layer 0 (${JSON.stringify([front, back])})`);

  const v5e = page.locator('.generation-layout[data-generation="v5e"]');
  assert.equal(await v5e.getAttribute('data-rank'), '2');
  assert.equal(await v5e.getAttribute('data-topology'), '4x4');
  assert.equal(await v5e.locator('.chip').count(), 16);
  assert.equal(await v5e.locator('.chip[data-host="v5litepod-16-h1"]').count(), 8);
  assert.match(await v5e.locator('.generation-facts').innerText(), /HBM 16 GiB per device \(XLA reports 15\.75G\)/);
  assert.match(await page.locator('.generation-layout[data-generation="v6e"] .generation-facts').innerText(), /MXU 256×256/);
  await screenshots(page, 'pool-generations');
});
