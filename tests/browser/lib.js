// SPDX-License-Identifier: MIT
//
// lib.js - shared by the browser tests: running `tracker`, launching
// Debian's chromium headless through playwright-core (never a downloaded
// browser), opening a report while recording dialogs, requests and errors,
// and a tiny sequential test runner. run_browser.py sets the TRK_*
// environment. Must not: reach the network.
'use strict';
const assert = require('assert');
const fs = require('fs');
const path = require('path');
const { spawnSync } = require('child_process');

const E = process.env;
const { chromium } = require(E.TRK_PLAYWRIGHT);

const prog = (name) => path.join(E.TRK_PROGDIR, name);
const work = (name) => path.join(E.TRK_WORK, name);
const artifact = (name) => path.join(E.TRK_ARTIFACTS, name);

// Runs tracker (env: extra variables); returns {status, stdout, stderr, ms}.
function tracker(args, timeoutMs = 300000, env = {}) {
  const t0 = Date.now();
  const r = spawnSync(E.TRK_TRACKER, args, {
    env: Object.assign({}, process.env, env, { TRACKER_LIB: E.TRK_PRELOAD }),
    encoding: 'utf8',
    timeout: timeoutMs,
    maxBuffer: 64 << 20,
  });
  if (r.error) throw r.error;
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, ms: Date.now() - t0 };
}

function must(args, timeoutMs, env) {
  const r = tracker(args, timeoutMs, env);
  assert.strictEqual(r.status, 0, 'tracker ' + args.join(' ') + ' failed:\n' + r.stderr);
  return r;
}

// Records argv (with extra environment variables env) into a capture;
// returns its path.
function record(name, argv, env) {
  const out = work(name + '.bin');
  must(['run', '-q', '-o', out, '--', ...argv], undefined, env);
  return out;
}

// Writes a report of capture cap with extra options; returns {file, ms}.
function report(cap, name, extra = []) {
  const file = work(name + '.html');
  const r = must(['flamegraph', '--no-progress', '-f', '-o', file, ...extra, cap]);
  fs.copyFileSync(file, artifact(name + '.html'));
  return { file, ms: r.ms, stderr: r.stderr };
}

async function launch() {
  const profile = fs.mkdtempSync(work('chromium-'));
  return chromium.launchPersistentContext(profile, {
    executablePath: E.TRK_CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    viewport: { width: 1400, height: 900 },
  });
}

// Opens a report; returns {page, log, loadMs}. Any dialog is recorded and
// dismissed; requests other than the page itself are recorded.
async function open(ctx, file) {
  const page = await ctx.newPage();
  const log = { dialogs: [], requests: [], errors: [], console: [] };
  const url = 'file://' + file;
  page.on('dialog', (d) => {
    log.dialogs.push(d.message());
    d.dismiss().catch(() => {});
  });
  page.on('request', (r) => {
    if (r.url() !== url) log.requests.push(r.url());
  });
  page.on('pageerror', (e) => log.errors.push(e.message));
  page.on('console', (m) => log.console.push(m.type() + ': ' + m.text()));
  const t0 = Date.now();
  await page.goto(url);
  await page.waitForFunction(() => window.trkTest && window.trkTest.ready, null, { polling: 10 });
  // Until the first frame is painted, the page is not open for a user.
  await page.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
  const loadMs = Date.now() - t0;
  return { page, log, loadMs };
}

// The page must be silent: no errors, dialogs, requests or console output.
// Chromium's hint about repeated getImageData is the tests' own doing (they
// read pixels back), so it is not held against the page.
function clean(log) {
  assert.deepStrictEqual(log.errors, [], 'page errors');
  assert.deepStrictEqual(log.dialogs, [], 'dialogs fired');
  assert.deepStrictEqual(log.requests, [], 'network requests');
  assert.deepStrictEqual(log.console.filter((m) => !/willReadFrequently/.test(m)), [], 'console output');
}

const frames = (page) => page.evaluate(() => window.trkTest.visibleFrames());
const state = (page) => page.evaluate(() => window.trkTest.state());

// The first drawn frame named name (and matching pred).
async function frame(page, name, pred = () => true) {
  const f = (await frames(page)).find((x) => x.name === name && pred(x));
  assert.ok(f, 'no drawn frame ' + name);
  return f;
}

// Clicks the middle of a drawn frame.
async function clickFrame(page, f) {
  const r = await page.evaluate(() => window.trkTest.canvasRect());
  await page.mouse.click(r.left + f.x + f.w / 2, r.top + f.y + f.h / 2);
}

// Checks a temporal page's rows against its own high points: the bytes of
// the rows live at each bucket's high point must add up to exactly the heap
// the pass saw there. Returns the number of buckets.
async function checkTemporal(page) {
  const r = await page.evaluate(() => {
    const t = JSON.parse(document.getElementById('trk-data').textContent).temporal;
    const diff = new Float64Array(t.buckets + 1);
    const rows = t.rows;
    for (let i = 0; i < rows.bytes.length; i++) {
      const f = rows.from[i];
      const e = rows.to[i];
      diff[(f >> 1) + (f & 1)] += rows.bytes[i];
      diff[Math.min((e >> 1) + (e & 1), t.buckets)] -= rows.bytes[i];
    }
    const bad = [];
    let live = 0;
    for (let k = 0; k < t.buckets; k++) {
      live += diff[k];
      if (live !== t.high[k]) bad.push([k, live, t.high[k]]);
    }
    return { buckets: t.buckets, bad: bad.slice(0, 5), rows: rows.bytes.length };
  });
  assert.deepStrictEqual(r.bad, [], 'rows live at the high points vs the high points');
  return r;
}

async function shot(page, name) {
  await page.screenshot({ path: artifact(name + '.png'), fullPage: true });
}

// Runs [name, async fn] pairs in order; exits 1 if any failed.
async function run(tests, setup) {
  let failed = 0;
  let ctx = null;
  try {
    const env = setup ? await setup() : {};
    ctx = await launch();
    for (const [name, fn] of tests) {
      try {
        await fn(ctx, env);
        console.log('ok - ' + name);
      } catch (e) {
        failed++;
        console.log('not ok - ' + name + '\n' + (e && e.stack ? e.stack : e));
      }
    }
  } catch (e) {
    failed++;
    console.log('not ok - setup\n' + (e && e.stack ? e.stack : e));
  }
  if (ctx) await ctx.close();
  console.log(failed ? failed + ' failed' : 'all passed');
  process.exit(failed ? 1 : 0);
}

module.exports = { assert, fs, prog, work, artifact, tracker, must, record, report, launch, open, clean,
  frames, state, frame, clickFrame, checkTemporal, shot, run };
