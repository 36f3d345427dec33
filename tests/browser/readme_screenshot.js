// SPDX-License-Identifier: MIT
//
// readme_screenshot.js - remakes docs/flamegraph.png, the README's picture of
// a real report: tracker recording itself while it writes a --temporal
// report of fg_known, shown with a tooltip. Not a test; run it by hand
// through run_browser.py, from a build directory:
//
//   python3 ../tests/browser/run_browser.py --test ../tests/browser/readme_screenshot.js \
//     --tracker tracker --preload libtracker.so --progdir tests/browser --npm npm \
//     --artifacts tests/browser/artifacts
//
// The picture lands in the artifacts directory as readme.png.
'use strict';
const L = require('./lib');

(async () => {
  const known = L.record('known', [L.prog('fg_known')]);
  const self = L.record('self', [process.env.TRK_TRACKER, 'flamegraph', '--no-progress', '--temporal',
    '-f', '-o', L.work('inner.html'), known]);
  const r = L.report(self, 'readme', []);
  const ctx = await L.launch();
  const { page } = await L.open(ctx, r.file);
  await page.setViewportSize({ width: 1280, height: 860 });
  await page.evaluate(() => window.trkTest.redraw());
  const f = await L.frame(page, 'obj_open');
  const c = await page.evaluate(() => window.trkTest.canvasRect());
  await page.mouse.move(c.left + f.x + f.w * 0.6, c.top + f.y + f.h / 2);
  await page.screenshot({ path: L.artifact('readme.png') });
  await ctx.close();
  console.log('wrote ' + L.artifact('readme.png'));
})().catch((e) => {
  console.log(e.stack);
  process.exit(1);
});
