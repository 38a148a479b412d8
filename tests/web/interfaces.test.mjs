// The interfaces other tools consume, checked by those tools' own validators:
// Prometheus's `promtool check metrics` on GET /metrics, and swagger-parser
// (the OpenAPI 3.1 schema and its references) on GET /openapi.json. Both run
// against a live `tpujobs serve` that has run a job, so the metrics carry
// real labels and values. A missing promtool or node package is a failure:
// scripts/test.sh installs them.
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { join, resolve, dirname } from 'node:path';
import { after, before, test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { startService } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));
const webDir = process.env.TPUJOBS_WEB_DIR || resolve(here, '../../web');
let service;

before(async () => {
  service = await startService({ pool: 'v3-8' });
  const spec = {
    name: 'interfaces', trainer: { accelerator: 'tpu', devices: 1, max_epochs: 1 },
    model: { layers: [{ type: 'linear', out: 16 }, { type: 'relu' }, { type: 'linear', out: 3 }], loss: 'cross_entropy' },
    data: { dataset: 'iris', batch_size: 16 }, optimizer: { type: 'adam', lr: 0.01 },
  };
  const created = await fetch(`${service.url}/v1/jobs`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(spec),
  });
  const body = await created.text();
  assert.equal(created.status, 201, body);
  const { id } = JSON.parse(body);
  const done = await (await fetch(`${service.url}/v1/jobs/${id}/wait?timeout=120`)).json();
  assert.equal(done.state, 'SUCCEEDED', JSON.stringify(done));
});

after(async () => {
  if (service) await service.stop();
});

test('GET /metrics passes promtool check metrics', async () => {
  const response = await fetch(`${service.url}/metrics`);
  assert.equal(response.status, 200);
  assert.match(response.headers.get('content-type'), /^text\/plain; version=0\.0\.4/);
  const text = await response.text();
  assert.match(text, /tpujobs_jobs_submitted_total|tpujobs_/, 'no tpujobs_ series in /metrics');
  const promtool = spawnSync('promtool', ['check', 'metrics'], { input: text, encoding: 'utf8' });
  assert.equal(promtool.error, undefined, `promtool could not run (apt-get install prometheus): ${promtool.error}`);
  assert.equal(promtool.status, 0, `promtool check metrics failed:\n${promtool.stdout}${promtool.stderr}`);
});

test('GET /openapi.json is a valid OpenAPI 3.1 document (swagger-parser)', async () => {
  const response = await fetch(`${service.url}/openapi.json`);
  assert.equal(response.status, 200);
  const document = await response.json();
  assert.equal(document.openapi, '3.1.0');
  const require = createRequire(join(webDir, 'package.json'));
  const SwaggerParser = require('@apidevtools/swagger-parser');
  // validate() checks the document against the OpenAPI schema, resolves every
  // $ref and rejects duplicate operation ids and path parameters that are not
  // declared; it throws with the first problem.
  const api = await SwaggerParser.validate(structuredClone(document));
  for (const path of ['/v1/jobs', '/v1/jobs/{id}', '/v1/pool', '/metrics']) {
    assert.ok(api.paths[path], `${path} is not in /openapi.json`);
  }
});
