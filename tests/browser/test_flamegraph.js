// SPDX-License-Identifier: MIT
//
// test_flamegraph.js - the flamegraph page in a real browser (Debian's
// chromium, headless): fg_known's exactly known allocations drawn as the
// expected frames, click-zoom with breadcrumbs and Escape, search and its
// exact matched share, orientation, the thread filter, the temporal brush,
// capture strings shown as text (markup passed as the command line and as a
// thread name), and the command's output-file rules. Screenshots go to the
// artifacts directory. Must not: reach the network.
'use strict';
const L = require('./lib');
const { assert, fs } = L;
const path = require('path');

const XSS1 = '<script>alert(1)</script>';
const XSS2 = '<img src=x onerror=alert(2)>';

async function setup() {
  const cap = L.record('known', [L.prog('fg_known'), XSS1, XSS2]);
  const stats = JSON.parse(L.must(['stats', '--json', cap]).stdout);
  return {
    cap,
    stats,
    peak: L.report(cap, 'peak', ['--threshold', '0']),
    temporal: L.report(cap, 'temporal', ['--temporal', '--threads', '--threshold', '0']),
    inverted: L.report(cap, 'inverted', ['--inverted', '--threshold', '0']),
    // Every block still allocated at exit: fg_known's are reachable from
    // its globals, and --leaks alone counts only the lost ones.
    leaks: L.report(cap, 'leaks', ['--leaks', '--kinds', 'all', '--threshold', '0']),
    threads: L.report(cap, 'threads', ['--threads', '--threshold', '0']),
  };
}

const byName = (fr, name) => fr.filter((f) => f.name === name);

async function typeSearch(page, q) {
  await page.fill('#search', q);
  await page.waitForFunction((q) => window.trkTest.state().query === q, q);
  return (await L.state(page)).search;
}

// Drags on the chart from time a to time b (ns after the start).
async function brush(page, a, b) {
  const p = await page.evaluate((t) => window.trkTest.chartPoint(t), a);
  const q = await page.evaluate((t) => window.trkTest.chartPoint(t), b);
  await page.mouse.move(p.x, p.y);
  await page.mouse.down();
  await page.mouse.move(q.x, q.y, { steps: 5 });
  await page.mouse.up();
}

// The thread named "<b>th</b>" alone: worker's 50,000 bytes.
async function threadFilter(ctx, rep) {
  const { page, log } = await L.open(ctx, rep.file);
  const labels = await page.$$eval('#thread option', (o) => o.map((x) => x.textContent));
  const label = labels.find((l) => l.includes('(<b>th</b>)'));
  assert.ok(label, 'thread name shown as text: ' + JSON.stringify(labels));
  assert.strictEqual(await page.evaluate(() => document.querySelectorAll('b').length), 0);
  await page.selectOption('#thread', { label });
  const fr = await L.frames(page);
  assert.strictEqual(byName(fr, 'all')[0].value, 50000);
  assert.strictEqual(byName(fr, 'worker')[0].value, 50000);
  assert.strictEqual(byName(fr, 'phase_two').length, 0);
  await L.shot(page, 'thread-' + path.basename(rep.file, '.html'));
  L.clean(log);
  await page.close();
}

const tests = [
  ['capture strings render as text, nothing runs', async (ctx, env) => {
    const html = fs.readFileSync(env.peak.file, 'utf8');
    assert.ok(!html.includes(XSS1) && !html.includes('<img src=x'), 'raw markup in the file');
    const { page, log } = await L.open(ctx, env.peak.file);
    const cmd = await page.textContent('#cmd');
    assert.ok(cmd.includes("'" + XSS1 + "'") && cmd.includes("'" + XSS2 + "'"), cmd);
    const found = await page.evaluate(() => ({
      imgs: document.querySelectorAll('img').length,
      scripts: [...document.scripts].filter((s) => s.id !== 'trk-data' && /alert\(/.test(s.textContent)).length,
    }));
    assert.deepStrictEqual(found, { imgs: 0, scripts: 0 });
    await page.waitForTimeout(300); // a dialog, were one to open, has had its chance
    L.clean(log);
    const facts = await page.textContent('#facts');
    assert.ok(facts.includes('pid' + env.stats.pid) || facts.includes(String(env.stats.pid)), facts);
    await page.close();
  }],

  ['the canvas draws the expected top frames', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.peak.file);
    const fr = await L.frames(page);
    const all = byName(fr, 'all')[0];
    assert.strictEqual(all.value, env.stats.peak_heap_bytes);
    assert.strictEqual(all.depth, 0);
    assert.strictEqual(byName(fr, 'phase_two')[0].value, 3000000);
    assert.strictEqual(byName(fr, 'alpha_alloc')[0].value, 600000);
    assert.strictEqual(byName(fr, 'gamma_fn')[0].value, 300000);
    assert.strictEqual(byName(fr, 'worker')[0].value, 50000);
    assert.deepStrictEqual(byName(fr, 'beta').map((f) => f.value).sort((a, b) => a - b), [100000, 300000]);
    assert.strictEqual(byName(fr, 'phase_one').length, 0, 'phase_one is not live at the peak');
    const two = byName(fr, 'phase_two')[0];
    assert.ok(Math.abs(two.w - (all.w * 3000000) / all.value) < 0.01, 'width proportional to bytes');
    assert.strictEqual(two.kind, 'application');
    assert.strictEqual(byName(fr, '__libc_start_main_impl')[0].kind, 'libc/runtime');
    // The pixels: phase_two's box is painted, the space under the deepest row is not.
    const px = await page.evaluate((f) => {
      const c = document.getElementById('flame-canvas');
      const d = window.devicePixelRatio || 1;
      const at = (x, y) => Array.from(c.getContext('2d').getImageData(x * d, y * d, 1, 1).data.slice(0, 3));
      return { box: at(f.x + f.w / 2, f.y + f.h / 2), gap: at(f.x + 2, c.clientHeight - 1) };
    }, two);
    assert.notDeepStrictEqual(px.box, [255, 255, 255], 'phase_two not painted');
    await L.shot(page, 'peak');
    L.clean(log);
    await page.close();
  }],

  ['click zooms, breadcrumbs and Escape go back', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.peak.file);
    const width = (await page.evaluate(() => window.trkTest.canvasRect())).width;
    await L.clickFrame(page, await L.frame(page, 'beta', (f) => f.value === 300000));
    let st = await L.state(page);
    assert.strictEqual(st.zoom, 'beta');
    assert.deepStrictEqual(st.crumbs, ['all', '_start', '__libc_start_main_impl', '__libc_start_call_main', 'main', 'beta']);
    let fr = await L.frames(page);
    assert.ok(Math.abs(byName(fr, 'gamma_fn')[0].w - width) < 1, 'gamma_fn spans the zoomed view');
    assert.strictEqual(byName(fr, 'phase_two').length, 0);
    await L.shot(page, 'zoom');
    await page.keyboard.press('Escape');
    st = await L.state(page);
    assert.strictEqual(st.zoom, 'all');
    assert.strictEqual(byName(await L.frames(page), 'phase_two').length, 1);
    // Zoom again, then back through a breadcrumb.
    await L.clickFrame(page, await L.frame(page, 'alpha_alloc'));
    assert.strictEqual((await L.state(page)).zoom, 'alpha_alloc');
    await page.click('#crumbs button:first-child');
    assert.strictEqual((await L.state(page)).zoom, 'all');
    L.clean(log);
    await page.close();
  }],

  ['search highlights and gives the exact matched share', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.peak.file);
    const peak = env.stats.peak_heap_bytes;
    let s = await typeSearch(page, 'alpha');
    assert.deepStrictEqual(s, { frames: 2, value: 600000, whole: peak, share: 600000 / peak });
    const fr = await L.frames(page);
    assert.deepStrictEqual(fr.filter((f) => f.matched).map((f) => f.name).sort(), ['alpha', 'alpha_alloc']);
    assert.ok((await page.textContent('#match')).startsWith('2 matching frames'));
    await L.shot(page, 'search');
    s = await typeSearch(page, 'BETA');
    assert.strictEqual(s.value, 400000, 'both beta boxes, gamma_fn counted once');
    await L.clickFrame(page, await L.frame(page, 'beta', (f) => f.value === 300000));
    s = await typeSearch(page, 'gamma');
    assert.strictEqual(s.share, 1, 'share of the zoomed view');
    s = await typeSearch(page, 'no such function');
    assert.strictEqual(s.frames, 0);
    L.clean(log);
    await page.close();
  }],

  ['icicle and flame orientation, bytes and counts', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.peak.file);
    await page.click('#flame');
    let fr = await L.frames(page);
    const maxY = Math.max(...fr.map((f) => f.y));
    assert.strictEqual(byName(fr, 'all')[0].y, maxY, 'root at the bottom');
    assert.strictEqual((await L.state(page)).orientation, 'flame');
    await L.shot(page, 'flame');
    await page.click('#icicle');
    assert.strictEqual(byName(await L.frames(page), 'all')[0].y, 0, 'root on top');
    await page.selectOption('#metric', 'count');
    fr = await L.frames(page);
    assert.strictEqual(byName(fr, 'phase_two')[0].value, 1);
    assert.deepStrictEqual(byName(fr, 'beta').map((f) => f.value), [1, 1]);
    L.clean(log);
    await page.close();
  }],

  ['inverted and leaks reports', async (ctx, env) => {
    let { page, log } = await L.open(ctx, env.inverted.file);
    let fr = (await L.frames(page)).filter((f) => f.depth === 1);
    const top = Object.fromEntries(fr.map((f) => [f.name, f.value]));
    assert.strictEqual(top.phase_two, 3000000);
    assert.strictEqual(top.alpha_alloc, 600000);
    assert.strictEqual(top.gamma_fn, 300000);
    assert.strictEqual(top.beta, 100000);
    assert.strictEqual(top.worker, 50000);
    L.clean(log);
    await page.close();
    ({ page, log } = await L.open(ctx, env.leaks.file));
    fr = await L.frames(page);
    assert.strictEqual(byName(fr, 'all')[0].value, env.stats.leaked_bytes);
    assert.strictEqual(byName(fr, 'phase_two').length, 0);
    assert.strictEqual(byName(fr, 'alpha_alloc')[0].value, 600000);
    L.clean(log);
    await page.close();
  }],

  ['temporal: the whole run is the peak view', async (ctx, env) => {
    const key = (fr) => fr.map((f) => f.depth + ':' + f.name + ':' + f.value).sort();
    let { page, log } = await L.open(ctx, env.peak.file);
    const peak = key(await L.frames(page));
    await page.close();
    ({ page, log } = await L.open(ctx, env.temporal.file));
    assert.deepStrictEqual(key(await L.frames(page)), peak);
    await L.checkTemporal(page);
    L.clean(log);
    await page.close();
  }],

  ['temporal: the timeline brush redraws the flamegraph for the range', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.temporal.file);
    // phase_one: the first stretch with 2,000,000 bytes or more live.
    const [a, b] = await page.evaluate(() => {
      const tl = JSON.parse(document.getElementById('trk-data').textContent).timeline;
      const i = tl.heap.findIndex((v) => v >= 2000000);
      let j = i;
      while (j < tl.heap.length && tl.heap[j] >= 2000000) j++;
      return [tl.t[i], tl.t[j]];
    });
    await brush(page, a + (b - a) * 0.3, a + (b - a) * 0.7);
    let st = await L.state(page);
    assert.ok(st.range && st.range.e < st.range.s + 100, 'a range was picked: ' + JSON.stringify(st.range));
    let fr = await L.frames(page);
    assert.strictEqual(byName(fr, 'phase_one')[0].value, 2000000);
    assert.strictEqual(byName(fr, 'phase_two').length, 0);
    assert.strictEqual(byName(fr, 'all')[0].value, 2000000);
    await L.shot(page, 'temporal');
    // From the start to just after phase_one's free.
    await brush(page, 0, b + (b - a) * 0.1);
    assert.strictEqual(byName(await L.frames(page), 'phase_one')[0].value, 2000000);
    await page.selectOption('#tmode', 'leaks');
    st = await L.state(page);
    assert.strictEqual(st.total, 0, 'phase_one was freed inside the range');
    assert.ok(await page.isVisible('#empty'));
    await page.selectOption('#tmode', 'allocated');
    assert.strictEqual(byName(await L.frames(page), 'phase_one')[0].value, 2000000);
    await page.selectOption('#tmode', 'peak');
    await page.click('#brush-clear');
    fr = await L.frames(page);
    assert.strictEqual(byName(fr, 'phase_two')[0].value, 3000000);
    assert.strictEqual(byName(fr, 'all')[0].value, env.stats.peak_heap_bytes);
    L.clean(log);
    await page.close();
  }],

  ['thread filter, thread names as text', async (ctx, env) => {
    for (const rep of [env.temporal, env.threads]) await threadFilter(ctx, rep);
  }],

  ['host and GPU memory switch', async (ctx, env) => {
    const dir = process.env.TRK_GPUDIR;
    const exe = dir && path.join(dir, 'gpu_runtime13');
    if (!exe || !fs.existsSync(exe)) {
      console.log('# skip: no ' + (exe || 'TRK_GPUDIR'));
      return;
    }
    const libs = [path.join(dir, 'fake', 'cuda'), path.join(dir, 'fake', 'cudart13')].join(':');
    const cap = L.record('gpu', [exe, 'basic'], { LD_LIBRARY_PATH: libs });
    const sum = JSON.parse(L.must(['summary', '--gpu', '--json', cap]).stdout);
    const own = (fn) => sum.locations.find((x) => x.function === fn).own_bytes;
    const host = JSON.parse(L.must(['stats', '--json', cap]).stdout).peak_heap_bytes;
    const rep = L.report(cap, 'gpu', ['--threshold', '0']);
    const { page, log } = await L.open(ctx, rep.file);
    assert.ok(await page.isVisible('#space'));
    assert.deepStrictEqual(await page.evaluate(() => window.trkTest.spaces()), ['heap', 'gpu']);
    let st = await L.state(page);
    assert.strictEqual(st.space, 'heap');
    assert.strictEqual(st.total, host);
    assert.match(await page.textContent('#mode'), /host memory/);
    // Zoomed and searching on the host tree, then to device memory:
    // zoom starts over, the search applies to the new tree.
    await L.clickFrame(page, (await L.frames(page)).find((f) => f.depth === 1));
    assert.notStrictEqual((await L.state(page)).zoom, 'all');
    await typeSearch(page, 'rt_alloc');
    await page.selectOption('#space', { label: 'GPU memory' });
    st = await L.state(page);
    assert.strictEqual(st.space, 'gpu');
    assert.strictEqual(st.zoom, 'all');
    assert.strictEqual(await page.textContent('#mode'), 'Live at the peak · GPU memory, every device');
    let fr = await L.frames(page);
    // The runtime's cudaMalloc is an allocator frame, hidden (the page says
    // so): its caller rt_alloc owns the bytes.
    assert.match(await page.textContent('#allocator-hint'), /Allocator frames .* are hidden/);
    assert.strictEqual(byName(fr, 'cudaMalloc').length, 0, 'cudaMalloc hidden');
    for (const fn of ['rt_alloc', 'rt_alloc_host']) {
      assert.ok(own(fn) > 0, fn + ' in summary --gpu');
      assert.strictEqual(byName(fr, fn).reduce((a, f) => a + f.value, 0), own(fn), fn);
    }
    assert.ok(st.search.frames > 0 && st.search.value >= own('rt_alloc'), JSON.stringify(st.search));
    const one = await L.frame(page, 'rt_alloc_host');
    await L.clickFrame(page, one);
    st = await L.state(page);
    assert.strictEqual(st.zoom, 'rt_alloc_host');
    assert.ok((await L.frame(page, 'rt_alloc_host', (f) => f.value === one.value)).w > one.w, 'zoomed in');
    await page.selectOption('#space', { label: 'Host memory' });
    st = await L.state(page);
    assert.strictEqual(st.space, 'heap');
    assert.strictEqual(st.zoom, 'all');
    assert.strictEqual(st.total, host);
    assert.strictEqual(st.search.whole, host, 'the search now covers the host tree');
    await L.shot(page, 'gpu');
    L.clean(log);
    await page.close();
    // With --threads the device trees carry every thread's values: the
    // thread filter is off while one is shown.
    const th = await L.open(ctx, L.report(cap, 'gpu-threads', ['--threads', '--threshold', '0']).file);
    await th.page.selectOption('#space', { label: 'GPU memory' });
    assert.ok(await th.page.isDisabled('#thread'));
    assert.strictEqual((await L.state(th.page)).total, (await L.frame(th.page, 'all')).value);
    await th.page.selectOption('#space', { label: 'Host memory' });
    assert.ok(!(await th.page.isDisabled('#thread')));
    L.clean(th.log);
    await th.page.close();
    // Without GPU events, no selector.
    const { page: p2 } = await L.open(ctx, env.peak.file);
    assert.ok(!(await p2.isVisible('#space')));
    assert.deepStrictEqual(await p2.evaluate(() => window.trkTest.spaces()), []);
    await p2.close();
  }],

  ['Python boxes read "func file:line"', async (ctx) => {
    // Python first (issue 10): the line that allocated is the box, and its
    // file and line are in the box's text, not only in the tooltip.
    if (!fs.existsSync('/usr/bin/python3')) return;
    const script = L.work('pybox.py');
    fs.writeFileSync(script, 'def grow(n):\n    return bytearray(n)\n\n\nKEPT = grow(30000000)\n');
    const cap = L.record('pybox', ['/usr/bin/python3', script], { PYTHONDONTWRITEBYTECODE: '1' });
    const rep = L.report(cap, 'pybox', ['--threshold', '0']);
    const { page, log } = await L.open(ctx, rep.file);
    const fr = await L.frames(page);
    const grow = byName(fr, 'grow');
    assert.strictEqual(grow.length, 1, JSON.stringify(fr.map((f) => f.label)));
    assert.strictEqual(grow[0].label, 'grow pybox.py:2');
    assert.ok(grow[0].w >= 28, 'the box is wide enough for its label: ' + grow[0].w);
    assert.strictEqual(byName(fr, '<module>')[0].label, '<module> pybox.py:5');
    // Python first: no native frame under the line (bytearray's malloc).
    const kids = fr.filter((f) => f.depth > grow[0].depth && f.x >= grow[0].x && f.x < grow[0].x + grow[0].w);
    assert.deepStrictEqual(kids.map((f) => f.name), [], 'frames under grow()');
    const mode = await page.textContent('#mode');
    assert.ok(mode.includes('Python frames only') && mode.includes('Python + native'), mode);
    // The page's Stacks switch: the hybrid tree (libc's start above
    // <module>), the same Python boxes, and back.
    assert.ok(await page.isVisible('#frames'), 'the Stacks switch is shown');
    // Python only: the script's <module> is a root; hybrid: under libc's
    // start (native frames outside the outermost Python frame).
    const modDepth = () => page.evaluate(() =>
      window.trkTest.visibleFrames().find((f) => f.label === '<module> pybox.py:5').depth);
    assert.strictEqual(await modDepth(), 1);
    await page.selectOption('#frames', { label: 'Python + native' });
    await page.waitForFunction(() =>
      window.trkTest.visibleFrames().find((f) => f.label === '<module> pybox.py:5').depth > 1);
    let hy = await L.frames(page);
    assert.strictEqual(byName(hy, 'grow')[0].label, 'grow pybox.py:2');
    assert.strictEqual(byName(hy, 'grow')[0].value, grow[0].value);
    assert.ok((await page.textContent('#mode')).includes('Python and native frames'));
    await page.selectOption('#frames', { label: 'Python only' });
    await page.waitForFunction(() =>
      window.trkTest.visibleFrames().find((f) => f.label === '<module> pybox.py:5').depth === 1);
    hy = await L.frames(page);
    assert.strictEqual(byName(hy, 'grow')[0].value, grow[0].value);
    // Without the import machinery: importlib's frames of the start-up
    // imports go, the script's boxes stay.
    const frozen = () => page.evaluate(() =>
      window.trkTest.visibleFrames().filter((f) => f.label.includes('<frozen importlib')).length);
    assert.ok((await frozen()) > 0, 'importlib frames in the Python-only view');
    await page.selectOption('#frames', { label: 'Python, no import machinery' });
    await page.waitForFunction(() =>
      !window.trkTest.visibleFrames().some((f) => f.label.includes('<frozen importlib')));
    assert.ok((await page.textContent('#mode')).includes('import machinery hidden'));
    hy = await L.frames(page);
    assert.strictEqual(byName(hy, 'grow')[0].label, 'grow pybox.py:2');
    assert.strictEqual(byName(hy, 'grow')[0].value, grow[0].value);
    // --native: the hybrid stacks, and the page says so.
    const nat = L.report(cap, 'pybox-native', ['--threshold', '0', '--native']);
    const p2 = await L.open(ctx, nat.file);
    const fr2 = await L.frames(p2.page);
    assert.ok(fr2.find((f) => f.label === '<module> pybox.py:5').depth > 1, '<module> under libc with --native');
    assert.ok((await p2.page.textContent('#mode')).includes('Python and native frames (--native)'));
    assert.ok(!(await p2.page.isVisible('#frames')), 'no Stacks switch on a --native page');
    L.clean(p2.log);
    await p2.page.close();
    await L.shot(page, 'pybox');
    L.clean(log);
    await page.close();
  }],
  ['timeline: per-process lines, a clickable legend, linear or log scale', async (ctx, env) => {
    // Several processes (issue 10 §5-6): each process's own heap line by
    // default (not their RSS added up as if one process), a process
    // selector, the sum labelled as one; legend clicks hide a line and
    // rescale; a log scale keeps a small line visible under a large one.
    if (!fs.existsSync('/usr/bin/python3')) return;
    const script = L.work('forked.py');
    fs.writeFileSync(script, [
      'import os, time',
      'a = bytearray(24000000)',
      'pid = os.fork()',
      'if pid == 0:',
      '    b = bytearray(6000000)',
      '    time.sleep(0.1)',
      '    os._exit(0)',
      'os.waitpid(pid, 0)',
      ''].join('\n'));
    const cap = L.record('forked', ['/usr/bin/python3', script], { PYTHONDONTWRITEBYTECODE: '1' });
    const sum = JSON.parse(L.must(['summary', '--all', '--json', cap]).stdout);
    const peaks = sum.processes.map((p) => p.peak_heap_bytes);
    assert.strictEqual(peaks.length, 2, JSON.stringify(sum.processes));
    const rep = L.report(cap, 'forked', ['--all', '--threshold', '0']);
    const { page, log } = await L.open(ctx, rep.file);
    const tl = () => page.evaluate(() => window.trkTest.timeline());
    assert.ok(await page.isVisible('#tl-proc'), 'the process selector is shown');
    const opts = await page.$$eval('#tl-proc option', (os) => os.map((o) => o.textContent));
    assert.strictEqual(opts.length, 4, JSON.stringify(opts));
    assert.strictEqual(opts[0], 'heap of each process');
    assert.strictEqual(opts[3], 'sum of all processes');
    for (const o of opts.slice(1, 3)) assert.match(o, /^pid \d+ python3/);
    let t = await tl();
    assert.strictEqual(t.view, 'each');
    assert.deepStrictEqual(t.series.map((x) => x.label), opts.slice(1, 3).map((o) => o + ' heap'));
    // Each line is that process's heap: its highest point is its own peak.
    assert.deepStrictEqual(t.series.map((x) => x.max).sort((a, b) => a - b), peaks.slice().sort((a, b) => a - b));
    assert.match(t.marker.label, /^peak pid \d+ python3 /);
    assert.strictEqual(t.marker.v, Math.max(...peaks));
    const facts = await page.textContent('#facts');
    assert.ok(facts.includes('largest process peak heap'), facts);
    // The legend hides a line, the scale follows what is shown.
    const big = t.series.findIndex((x) => x.max === Math.max(...peaks));
    const buttons = await page.$$('#series button');
    assert.strictEqual(buttons.length, 2);
    await buttons[big].click();
    t = await tl();
    assert.strictEqual(t.series[big].shown, false);
    assert.strictEqual(await buttons[big].getAttribute('aria-pressed'), 'false');
    assert.ok(Math.abs(t.max - 1.08 * t.series[1 - big].max) < 1, 'rescaled to the line shown');
    await buttons[big].click();
    assert.strictEqual((await tl()).series[big].shown, true);
    // One process: its heap, mmap and RSS.
    await page.selectOption('#tl-proc', { index: 1 });
    t = await tl();
    assert.strictEqual(t.view, 0);
    assert.deepStrictEqual(t.series.map((x) => x.label.split(',')[0]), ['heap', 'anonymous mmap', 'RSS']);
    assert.ok(t.series.every((x) => x.label.endsWith(', ' + opts[1])), JSON.stringify(t.series));
    // The sum, labelled as one.
    await page.selectOption('#tl-proc', { label: 'sum of all processes' });
    t = await tl();
    assert.deepStrictEqual(t.series.map((x) => x.label),
      ['heap, sum of 2 processes', 'anonymous mmap, sum of 2 processes', 'RSS, sum of 2 processes']);
    assert.strictEqual((await page.$$('#series button')).length, 3);
    // Log scale: 1 MiB sits far higher than on the linear scale.
    const lin = await page.evaluate(() => window.trkTest.chartFrac(1 << 20));
    await page.selectOption('#tl-scale', 'log');
    assert.strictEqual((await tl()).scale, 'log');
    const lg = await page.evaluate(() => window.trkTest.chartFrac(1 << 20));
    assert.ok(lin < 0.1 && lg > 0.7, 'linear ' + lin + ', log ' + lg);
    await L.shot(page, 'forked');
    L.clean(log);
    await page.close();
    // One capture: no selector; the legend still hides lines.
    const one = L.report(cap, 'forked-one', ['--threshold', '0']);
    const p1 = await L.open(ctx, one.file);
    assert.ok(!(await p1.page.isVisible('#tl-proc')), 'no process selector for one capture');
    const b1 = await p1.page.$$('#series button');
    assert.deepStrictEqual(await Promise.all(b1.map((b) => b.textContent())), ['heap', 'anonymous mmap', 'RSS']);
    await b1[2].click();
    assert.strictEqual((await p1.page.evaluate(() => window.trkTest.timeline())).series[2].shown, false);
    L.clean(p1.log);
    await p1.page.close();
  }],
  ['output file rules and exit codes', async (ctx, env) => {
    const out = L.work('rules.html');
    fs.writeFileSync(out, 'keep me');
    let r = L.tracker(['flamegraph', '-o', out, env.cap]);
    assert.strictEqual(r.status, 2);
    assert.match(r.stderr, /exists \(use -f to overwrite\)/);
    assert.strictEqual(fs.readFileSync(out, 'utf8'), 'keep me');
    fs.mkdirSync(L.work('adir'));
    r = L.tracker(['flamegraph', '-f', '-o', L.work('adir'), env.cap]);
    assert.strictEqual(r.status, 2);
    assert.match(r.stderr, /not a regular file/);
    r = L.tracker(['flamegraph', '-o', L.work('no/such/dir.html'), env.cap]);
    assert.strictEqual(r.status, 2);
    assert.match(r.stderr, /cannot write/);
    const bad = L.work('bad.bin');
    fs.writeFileSync(bad, 'not a capture at all');
    r = L.tracker(['flamegraph', '-o', L.work('bad.html'), bad]);
    assert.strictEqual(r.status, 1);
    assert.ok(!fs.existsSync(L.work('bad.html')));
    assert.strictEqual(L.tracker(['flamegraph', '--bogus', env.cap]).status, 2);
    assert.strictEqual(L.tracker(['flamegraph', '--temporal', '--temporary', env.cap]).status, 2);
    assert.strictEqual(L.tracker(['flamegraph', '--threshold', '101', env.cap]).status, 2);
    // Default output: beside the capture, .bin replaced by .html.
    const copy = L.work('copy.bin');
    fs.copyFileSync(env.cap, copy);
    r = L.tracker(['flamegraph', '--no-progress', copy]);
    assert.strictEqual(r.status, 0, r.stderr);
    assert.ok(fs.statSync(L.work('copy.html')).size > 1000);
    assert.strictEqual(L.tracker(['flamegraph', copy]).status, 2);
    // -f replaces a symlink itself, never what it points to.
    fs.writeFileSync(L.work('target.txt'), 'target');
    fs.symlinkSync(L.work('target.txt'), L.work('link.html'));
    assert.strictEqual(L.tracker(['flamegraph', '-f', '--no-progress', '-o', L.work('link.html'), env.cap]).status, 0);
    assert.strictEqual(fs.readFileSync(L.work('target.txt'), 'utf8'), 'target');
    assert.ok(!fs.lstatSync(L.work('link.html')).isSymbolicLink());
  }],
];

L.run(tests, setup);
