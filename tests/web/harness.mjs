// What every browser test needs: its own `tpujobs serve` (free port, temp
// state dir, embedded PostgreSQL), Debian's Chromium driven by playwright-core,
// and a place for screenshots. Missing pieces are errors, never skips: the
// suite's setup (scripts/test.sh) installs them.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const webDir = process.env.TPUJOBS_WEB_DIR || resolve(here, '../../web');
export const screenshotDir = process.env.TPUJOBS_SCREENSHOTS || join(tmpdir(), 'tpujobs-web-screenshots');
export const VIEWPORTS = { desktop: { width: 1280, height: 800 }, phone: { width: 390, height: 844 } };

function loadPlaywright() {
  const require = createRequire(join(webDir, 'package.json'));
  try {
    return require('playwright-core');
  } catch (error) {
    throw new Error(`playwright-core is not installed in ${webDir}/node_modules: run \`npm ci\` in web/ (${error.message})`);
  }
}

// Starts `tpujobs serve` and resolves to {url, stop()} once it listens.
export async function startService({ pool, args: extraArgs = [] } = {}) {
  const binary = process.env.TPUJOBS_BIN;
  if (!binary || !existsSync(binary)) throw new Error(`TPUJOBS_BIN must name the built tpujobs binary (got ${binary})`);
  const stateDir = mkdtempSync(join(tmpdir(), 'tpujobs-web-'));
  const args = ['serve', '--listen', '127.0.0.1:0', '--state-dir', stateDir];
  if (pool) args.push('--pool', pool);
  args.push(...extraArgs);
  const child = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  let exit = null;  // how the process ended: "code 1" or "signal SIGSEGV"
  const exited = new Promise((resolveExit) => child.once('exit', (code, signal) => {
    exit = signal ? `signal ${signal}` : `code ${code}`;
    resolveExit();
  }));
  const url = await new Promise((resolveUrl, reject) => {
    const timer = setTimeout(() => reject(new Error(`tpujobs did not start within 90 s:\n${output}`)), 90_000);
    const onData = (chunk) => {
      output += chunk;
      const match = /listening on (http:\/\/[\d.]+:\d+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolveUrl(match[1]);
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`tpujobs ended (${exit}) before listening:\n${output}`));
    });
  });
  // Stops the service; throws when it had died on its own during the test.
  const stop = async () => {
    const diedEarlier = exit;
    if (!exit) {
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 20_000);
      await exited;
      clearTimeout(timer);
    }
    rmSync(stateDir, { recursive: true, force: true });
    if (diedEarlier) throw new Error(`tpujobs died during the test (${diedEarlier}):\n${output.slice(-4000)}`);
  };
  return { url, stop };
}

// Launches headless Chromium with a fresh profile; resolves to {context, page, close()}.
export async function launchBrowser() {
  const executablePath = process.env.TPUJOBS_CHROMIUM || '/usr/bin/chromium';
  if (!existsSync(executablePath)) throw new Error(`Chromium not found at ${executablePath}: apt-get install chromium`);
  const { chromium } = loadPlaywright();
  const profile = mkdtempSync(join(tmpdir(), 'tpujobs-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath,
    headless: true,
    viewport: VIEWPORTS.desktop,
    args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
      '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  context.setDefaultTimeout(20_000);
  const page = context.pages()[0] || await context.newPage();
  // Confirmation dialogs (Cancel, Fail) are answered "OK", as the user would.
  page.on('dialog', (dialog) => dialog.accept());
  const errors = [];
  page.on('pageerror', (error) => errors.push(error.message));
  const close = async () => {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  };
  return { context, page, errors, close };
}

// Saves `page` as <name>-desktop.png and <name>-phone.png, then restores the
// desktop size. Throws when the page is wider than either screen (a sideways scroll).
export async function screenshots(page, name) {
  mkdirSync(screenshotDir, { recursive: true });
  for (const [size, viewport] of Object.entries(VIEWPORTS)) {
    await page.setViewportSize(viewport);
    await page.waitForTimeout(300);  // let charts resize
    await page.screenshot({ path: join(screenshotDir, `${name}-${size}.png`), fullPage: true });
    const width = await page.evaluate(() => document.documentElement.scrollWidth);
    if (width > viewport.width) throw new Error(`${name} is ${width}px wide on a ${viewport.width}px ${size} screen`);
  }
  await page.setViewportSize(VIEWPORTS.desktop);
}

// POSTs a job spec straight to the API (for tests about other pages).
export async function submitViaApi(url, spec) {
  const response = await fetch(`${url}/v1/jobs`, {
    method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(spec),
  });
  if (response.status !== 201) throw new Error(`submit answered ${response.status}: ${await response.text()}`);
  return response.json();
}
