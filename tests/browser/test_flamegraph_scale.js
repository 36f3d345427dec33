// SPDX-License-Identifier: MIT
//
// test_flamegraph_scale.js - the flamegraph page at scale, functionally: a
// report of a capture of ten million events stays under 10 MB, large pages
// open and draw, temporal rows stay exact when buckets are halved, a view of
// about 100 000 frames draws them all and answers the mouse (tooltip, zoom),
// and the size budget raises the merge threshold when it must. Nothing here
// is timed: CI is a loaded 2-core machine, where a wall-clock threshold
// fails at random. The timings live in bench/flamegraph_page.js. Must not:
// reach the network.
'use strict';
const L = require('./lib');
const { assert, fs } = L;

const MB10 = 10 * 1000 * 1000;

function figure(s) {
  console.log('figure: ' + s);
}

async function setup() {
  const many = L.record('many', [L.prog('fg_many')]);
  const stats = JSON.parse(L.must(['stats', '--json', many]).stdout);
  const wide = L.record('wide', [L.prog('fg_wide')]);
  return {
    stats,
    manyBytes: fs.statSync(many).size,
    manyPeak: L.report(many, 'many', []),
    manyTemporal: L.report(many, 'many_temporal', ['--temporal', '--threads']),
    manyHalved: L.report(many, 'many_halved', ['--temporal', '--max-mb', '0.25']),
    manyAllocated: L.report(many, 'many_allocated', ['--allocated', '--inverted', '--threshold', '0']),
    wide: L.report(wide, 'wide', ['--allocated', '--threshold', '0']),
    wideSmall: L.report(wide, 'wide_small', ['--allocated', '--threshold', '0', '--max-mb', '0.2']),
    cleanup: () => fs.rmSync(many),
  };
}

const tests = [
  ['a 10M-event capture is reported under 10 MB', async (ctx, env) => {
    assert.ok(env.stats.events >= 10000000, 'events: ' + env.stats.events);
    figure(env.stats.events + ' events, capture ' + (env.manyBytes / 1e6).toFixed(1) + ' MB');
    for (const [k, r] of [['peak', env.manyPeak], ['--temporal --threads', env.manyTemporal],
      ['--allocated --inverted --threshold 0', env.manyAllocated]]) {
      const size = fs.statSync(r.file).size;
      figure('tracker flamegraph ' + k + ': page ' + (size / 1e6).toFixed(2) + ' MB');
      assert.ok(size < MB10, k + ' page is ' + size + ' bytes');
    }
    env.cleanup();
  }],

  ['temporal rows add up to the heap at every high point', async (ctx, env) => {
    for (const [k, r] of [['256 buckets', env.manyTemporal], ['halved to fit 0.25 MB', env.manyHalved]]) {
      const { page, log } = await L.open(ctx, r.file);
      const c = await L.checkTemporal(page);
      figure('temporal ' + k + ': ' + c.buckets + ' buckets, ' + c.rows + ' rows, all exact');
      if (r === env.manyHalved) {
        assert.ok(c.buckets < 256, 'buckets were halved');
        assert.ok(fs.statSync(r.file).size <= 250000);
      }
      L.clean(log);
      await page.close();
    }
  }],

  ['large pages open, draw and stay silent', async (ctx, env) => {
    for (const [k, r] of [['10M events, peak', env.manyPeak], ['10M events, temporal', env.manyTemporal],
      ['100k frames', env.wide]]) {
      const o = await L.open(ctx, r.file);
      const st = await o.page.evaluate(() => window.trkTest.stats());
      assert.ok(st.frames > 0, k + ': frames drawn: ' + st.frames);
      L.clean(o.log);
      await o.page.close();
    }
  }],

  ['about 100 000 visible frames: all drawn, hover and zoom work', async (ctx, env) => {
    const { page, log } = await L.open(ctx, env.wide.file);
    const st = await page.evaluate(() => window.trkTest.stats());
    assert.ok(st.frames >= 95000, 'frames drawn: ' + st.frames);
    // A full redraw flushed to pixels draws the same frames again.
    const again = await page.evaluate(() => {
      window.trkTest.redraw();
      document.getElementById('flame-canvas').getContext('2d').getImageData(0, 0, 1, 1);
      return window.trkTest.stats().frames;
    });
    assert.strictEqual(again, st.frames);
    // Hover over the deepest rows, where frames are 1.3 px wide: the
    // tooltip names a frame of the chain.
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const r = await page.evaluate(() => window.trkTest.canvasRect());
    const y = Math.min(r.bottom, 900) - 30;
    await page.mouse.move(r.left + r.width / 3, y);
    assert.ok(await page.isVisible('#tip'), 'tooltip');
    assert.match(await page.textContent('#tip'), /chain/);
    await page.evaluate(() => window.scrollTo(0, 0));
    const left = await L.frame(page, 'left', (f) => f.depth === 6);
    await L.clickFrame(page, left);
    await page.evaluate(() => new Promise((res) => requestAnimationFrame(res)));
    const zoom = await page.evaluate(() => window.trkTest.stats());
    assert.ok(zoom.frames > 0 && zoom.frames < st.frames, 'zoomed frames: ' + zoom.frames);
    assert.strictEqual((await L.state(page)).zoom, 'left');
    await page.keyboard.press('Escape');
    await L.shot(page, 'wide');
    L.clean(log);
    await page.close();
  }],

  ['the size budget raises the threshold and says so', async (ctx, env) => {
    const size = fs.statSync(env.wideSmall.file).size;
    assert.ok(size <= 200000, 'page is ' + size + ' bytes');
    const { page, log } = await L.open(ctx, env.wideSmall.file);
    const note = await page.textContent('#merged');
    assert.match(note, /merged into "other" boxes \(the threshold was raised from 0%/);
    const all = (await L.frames(page)).find((f) => f.name === 'all');
    assert.strictEqual(all.value, 65536, 'merging keeps the total');
    figure('budget 0.2 MB: ' + size + ' bytes; ' + note);
    L.clean(log);
    await page.close();
  }],
];

L.run(tests, setup);
