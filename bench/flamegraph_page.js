// SPDX-License-Identifier: MIT
//
// flamegraph_page.js - timings of the flamegraph page at scale, in headless
// chromium: how long `tracker flamegraph` takes on a capture of ten million
// events, how long pages take to open (to the first painted frame), and how
// a view of about 100 000 frames redraws, answers the mouse and zooms.
// Prints one "figure: ..." line per measure with its goal, and a last line
// naming the goals missed. Not a test: the browser suite
// (tests/browser/test_flamegraph_scale.js) checks the same pages
// functionally, without clocks. Run through tests/browser/run_browser.py
// (see bench/README.md). Must not: reach the network.
'use strict';
const L = require('../tests/browser/lib');
const { fs } = L;

const missed = [];

// Prints a figure; goal is [limit, unit] or null.
function figure(what, value, unit, goal) {
  let s = 'figure: ' + what + ': ' + value + ' ' + unit;
  if (goal !== null) {
    s += ' (goal < ' + goal + ' ' + unit + ')';
    if (!(value < goal)) missed.push(what);
  }
  console.log(s);
}

async function main() {
  const many = L.record('many', [L.prog('fg_many')]);
  const stats = JSON.parse(L.must(['stats', '--json', many]).stdout);
  console.log('figure: ' + stats.events + ' events, capture ' +
    (fs.statSync(many).size / 1e6).toFixed(1) + ' MB');
  const reports = [
    ['peak', L.report(many, 'many', [])],
    ['--temporal --threads', L.report(many, 'many_temporal', ['--temporal', '--threads'])],
    ['--allocated --inverted --threshold 0',
      L.report(many, 'many_allocated', ['--allocated', '--inverted', '--threshold', '0'])],
  ];
  for (const [k, r] of reports)
    figure('tracker flamegraph ' + k + ' (page ' + (fs.statSync(r.file).size / 1e6).toFixed(2) +
      ' MB)', (r.ms / 1000).toFixed(2), 's', 60);
  fs.rmSync(many);
  const wide = L.record('wide', [L.prog('fg_wide')]);
  const wideReport = L.report(wide, 'wide', ['--allocated', '--threshold', '0']);

  const ctx = await L.launch();
  try {
    for (const [k, r] of [['10M events, peak', reports[0][1]],
      ['10M events, temporal', reports[1][1]], ['100k frames', wideReport]]) {
      // The first open pays for starting the renderer; count the second.
      let o = await L.open(ctx, r.file);
      await o.page.close();
      o = await L.open(ctx, r.file);
      figure('open ' + k + ' (' + (fs.statSync(r.file).size / 1e6).toFixed(2) + ' MB)', o.loadMs,
        'ms', 2000);
      await o.page.close();
    }

    const { page } = await L.open(ctx, wideReport.file);
    const st = await page.evaluate(() => window.trkTest.stats());
    // Full redraws, each flushed to pixels (canvas drawing is deferred).
    const ms = await page.evaluate(() => {
      const c = document.getElementById('flame-canvas');
      const out = [];
      for (let i = 0; i < 5; i++) {
        const t0 = performance.now();
        window.trkTest.redraw();
        c.getContext('2d').getImageData(0, 0, 1, 1);
        out.push(performance.now() - t0);
      }
      return out.sort((a, b) => a - b)[2];
    });
    figure(st.frames + ' frames: redraw, median of 5, to pixels', ms.toFixed(1), 'ms', 500);
    // Hover over the deepest rows, where frames are 1.3 px wide: hit test,
    // outline and tooltip, timed inside the page (100 synthetic moves).
    await page.evaluate(() => window.scrollTo(0, document.body.scrollHeight));
    const r = await page.evaluate(() => window.trkTest.canvasRect());
    const y = Math.min(r.bottom, 900) - 30;
    const hover = await page.evaluate(([r, y]) => {
      const c = document.getElementById('flame-canvas');
      const t0 = performance.now();
      for (let i = 0; i < 100; i++)
        c.dispatchEvent(new MouseEvent('mousemove',
          { clientX: r.left + (i * r.width) / 100, clientY: y, bubbles: true }));
      return (performance.now() - t0) / 100;
    }, [r, y]);
    figure('hover, per mouse move (hit test, outline, tooltip)', hover.toFixed(2), 'ms', 16);
    await page.evaluate(() => window.scrollTo(0, 0));
    const left = await L.frame(page, 'left', (f) => f.depth === 6);
    const t1 = Date.now();
    await L.clickFrame(page, left);
    await page.evaluate(() => new Promise((res) => requestAnimationFrame(res)));
    const zoom = await page.evaluate(() => window.trkTest.stats());
    figure('zoom click to painted (' + zoom.frames + ' frames; layout ' + zoom.layoutMs.toFixed(1) +
      ' ms, draw calls ' + zoom.drawMs.toFixed(1) + ' ms)', Date.now() - t1, 'ms', null);
    await page.close();
  } finally {
    await ctx.close();
  }
  console.log(missed.length ? 'goals missed: ' + missed.join('; ') : 'goals: all met');
}

main().catch((e) => {
  console.log('error: ' + (e && e.stack ? e.stack : e));
  process.exit(1);
});
