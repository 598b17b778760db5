// Drives Debian's Chromium (headless, through puppeteer-core: no browser download) over
// the console's pages as a plan says, and prints what each page showed as one JSON
// document: console errors, failed requests (network failures and answers >= 400), the
// elements that carry data-* attributes (their attributes and text), and a screenshot.
// The Python side (test_console.py) compares those with what the APIs return.
//
//   node drive.mjs NPM_DIR PLAN.json
//
// PLAN: {"endpoint", "out_dir", "result" (where the JSON goes), "chromium" (default /usr/bin/chromium),
//        "login": null | {"bearer_token"} | {"access_key_id", "secret_access_key"},
//        "expect_login_page": bool,
//        "steps": [{"name", "hash", "wait": CSS selector, "wait_count": n (default 1),
//                   "timeout_ms", "screenshot": true | [{"name", "scroll_to": selector}],
//                   "click": selector (after waiting),
//                   "then_wait": selector}]}
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const [npmDirArg, planPath] = process.argv.slice(2);
if (!npmDirArg || !planPath) {
  console.error('usage: drive.mjs NPM_DIR PLAN.json');
  process.exit(2);
}
const plan = JSON.parse(readFileSync(planPath, 'utf8'));
const require = createRequire(join(resolve(npmDirArg), 'package.json'));
const puppeteer = (await import(pathToFileURL(require.resolve('puppeteer-core')).href)).default;

const profile = mkdtempSync(join(tmpdir(), 'icestream-chromium-'));
const browser = await puppeteer.launch({
  executablePath: plan.chromium || '/usr/bin/chromium',
  headless: true,
  // Without the background-networking flags Chromium tries to reach Google's services,
  // which floods a closed network and slows every page.
  args: ['--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking',
         '--disable-component-update', '--disable-sync', '--disable-default-apps', '--disable-extensions',
         '--metrics-recording-only', '--no-default-browser-check', `--user-data-dir=${profile}`],
  defaultViewport: { width: 1360, height: 900 },
});

const out = { steps: [], login: null, cookies: [] };
let exit = 0;
try {
  const page = await browser.newPage();
  let current = null;
  const note = (kind, detail) => { if (current) current[kind].push(detail); };
  page.on('console', (m) => { if (m.type() === 'error') note('console_errors', m.text()); });
  page.on('pageerror', (e) => note('console_errors', `pageerror: ${e.message}`));
  page.on('requestfailed', (r) => note('failed_requests', `${r.method()} ${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) note('failed_requests', `${r.request().method()} ${r.url()}: HTTP ${r.status()}`);
  });

  const extract = () => page.evaluate(() => {
    const els = [];
    for (const el of document.querySelectorAll('#main [data-stream], #main [data-channel], #main [data-table], ' +
        '#main [data-shard], #main [data-sequence], #main [data-error-code], #main [data-row], #main [data-snapshot], ' +
        '#main [data-schema-id], #main [data-field-id], #main [data-partition], #main [data-stat], #main [data-version], ' +
        '#main [data-schema], #main [data-op], #main [data-metric], #main [data-lag-records], #main [data-records], ' +
        '#main [data-last-rejected], #main [data-counts-source], #main [data-redrive-id], #main [data-api-error], #main [data-user-record]')) {
      els.push({ tag: el.tagName.toLowerCase(), data: { ...el.dataset }, text: (el.innerText ?? el.textContent ?? "").trim().slice(0, 4000) });
    }
    const pres = [...document.querySelectorAll('#main pre.payload')].map((p) => p.innerText);
    return { page: document.body.dataset.page, title: document.querySelector('#main h1')?.innerText ?? '',
             text: document.querySelector('#main')?.innerText.slice(0, 20000) ?? '', elements: els, payloads: pres,
             auth_mode: document.getElementById('auth-mode')?.innerText ?? '',
             notice: document.getElementById('notice')?.hidden ? '' : document.getElementById('notice')?.innerText ?? '' };
  });

  const go = async (step) => {
    current = { name: step.name, console_errors: [], failed_requests: [] };
    out.steps.push(current);
    const timeout = step.timeout_ms || 30000;
    const url = `${plan.endpoint}/console/${step.hash ? '#' + step.hash : ''}`;
    if (step.reload === false) await page.evaluate((h) => { location.hash = h; }, step.hash);
    else await page.goto(url, { waitUntil: 'domcontentloaded', timeout });
    try {
      await page.waitForFunction((sel, n) => document.querySelectorAll(sel).length >= n, { timeout, polling: 100 },
                                 step.wait || 'body[data-loaded]', step.wait_count || 1);
      if (step.click) {
        await page.click(step.click);
        if (step.then_wait) await page.waitForSelector(step.then_wait, { timeout });
      }
      await page.waitForNetworkIdle({ idleTime: 300, timeout }).catch(() => {});
    } catch (e) {
      current.timeout = `${e.message}`;
    }
    Object.assign(current, await extract());
    // screenshot: true (the top of the page), or a list of {name, scroll_to} views.
    const shots = step.screenshot === true ? [{ name: step.name }] : (step.screenshot || []);
    current.screenshots = [];
    for (const shot of shots) {
      await page.evaluate((sel) => {
        const el = sel ? document.querySelector(sel) : null;
        if (el) el.scrollIntoView({ block: 'start' });
        else window.scrollTo(0, 0);
      }, shot.scroll_to || null);
      const file = join(plan.out_dir, `console-${shot.name}.png`);
      await page.screenshot({ path: file, fullPage: false });
      current.screenshots.push(file);
    }
  };

  if (plan.login !== undefined && plan.login !== null) {
    current = { name: 'login', console_errors: [], failed_requests: [] };
    out.login = current;
    await page.goto(`${plan.endpoint}/console/`, { waitUntil: 'domcontentloaded' });
    await page.waitForSelector('#login-form', { timeout: 20000 });
    Object.assign(current, await extract());
    current.screenshot = join(plan.out_dir, 'console-login.png');
    await page.screenshot({ path: current.screenshot });
    if (plan.login.wrong) {
      const errorsBefore = current.console_errors.length;
      if (await page.$('button[data-method="bearer_token"]')) await page.click('button[data-method="bearer_token"]');
      await page.type('input[name=bearer_token]', plan.login.wrong);
      await page.click('#login-form button[type=submit]');
      await page.waitForSelector('#login-form .error-box', { timeout: 10000 });
      current.wrong_login_error = await page.$eval('#login-form .error-box', (e) => e.innerText);
      // A refused sign-in is an expected 401 (Chromium logs it as a console error too),
      // not a failure of the page.
      current.failed_requests = current.failed_requests.filter((r) => !r.includes('/console/api/login: HTTP 401'));
      current.console_errors = current.console_errors.filter((m, i) => i < errorsBefore || !m.includes('status of 401'));
      await page.goto(`${plan.endpoint}/console/`, { waitUntil: 'domcontentloaded' });
      await page.waitForSelector('#login-form', { timeout: 20000 });
    }
    if (plan.login.bearer_token) {
      if (await page.$('button[data-method="bearer_token"]')) await page.click('button[data-method="bearer_token"]');
      await page.type('input[name=bearer_token]', plan.login.bearer_token);
    } else {
      if (await page.$('button[data-method="access_key"]')) await page.click('button[data-method="access_key"]');
      await page.type('input[name=access_key_id]', plan.login.access_key_id);
      await page.type('input[name=secret_access_key]', plan.login.secret_access_key);
    }
    await page.click('#login-form button[type=submit]');
    await page.waitForFunction(() => document.body.dataset.page === 'overview', { timeout: 30000 });
    current.after = await extract();
    // The session cookie as the browser keeps it (its flags are checked by the test).
    out.cookies = (await page.cookies()).map((c) => ({ name: c.name, value: c.value, httpOnly: c.httpOnly,
                                                       sameSite: c.sameSite, path: c.path, expires: c.expires }));
  }
  for (const step of plan.steps) await go(step);
} catch (e) {
  out.error = e.stack || String(e);
  exit = 1;
} finally {
  await browser.close();
  rmSync(profile, { recursive: true, force: true });
}
writeFileSync(plan.result, JSON.stringify(out) + '\n');
process.exit(exit);
