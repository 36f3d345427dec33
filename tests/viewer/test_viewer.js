// SPDX-License-Identifier: MIT
//
// test_viewer.js - the flamegraph viewer's pure modules under `node --test`,
// no browser: format.js (bytes, counts, percentages, durations, command
// lines) and decode.js on hand-written data blocks of the documented format
// (docs/FLAMEGRAPH_DATA.md): the tree from "up" deltas, children in order,
// node deltas in rows, strings and locations, merged counts, every view
// (threads, temporal peak / leaks / allocated over bucket ranges), and the
// refusal of another format version. The modules are loaded as the page
// loads them: scripts that extend window.Trk.
'use strict';
const test = require('node:test');
const assert = require('node:assert');
const fs = require('node:fs');
const path = require('node:path');
const vm = require('node:vm');

// The viewer's sources: TRK_VIEWER_DIR when meson runs this, else the
// checkout's viewer/.
const VIEWER = process.env.TRK_VIEWER_DIR || path.join(__dirname, '..', '..', 'viewer');

function load() {
  const ctx = vm.createContext({ window: {} });
  for (const f of ['format.js', 'decode.js'])
    vm.runInContext(fs.readFileSync(path.join(VIEWER, f), 'utf8'), ctx, { filename: f });
  return ctx.window.Trk;
}
const T = load();

// ---- format.js ---------------------------------------------------------------

test('bytes: exact below 1 KiB, then 3 significant digits in binary units', () => {
  assert.strictEqual(T.bytes(0), '0 B');
  assert.strictEqual(T.bytes(1023), '1023 B');
  assert.strictEqual(T.bytes(1024), '1.00 KiB');
  assert.strictEqual(T.bytes(1536), '1.50 KiB');
  assert.strictEqual(T.bytes(10 * 1024), '10.0 KiB');
  assert.strictEqual(T.bytes(100 * 1024), '100 KiB');
  assert.strictEqual(T.bytes(5 * 1024 * 1024), '5.00 MiB');
  assert.strictEqual(T.bytes(2 ** 40), '1.00 TiB');
  assert.strictEqual(T.bytes(2 ** 60), '1024 PiB'); // the last unit has no cap
});

test('count: rounded, with thousands separators', () => {
  assert.strictEqual(T.count(0), '0');
  assert.strictEqual(T.count(1234567), '1,234,567');
  assert.strictEqual(T.count(999.6), '1,000');
});

test('percent: more digits for small shares, 0% of nothing', () => {
  assert.strictEqual(T.percent(1, 0), '0%');
  assert.strictEqual(T.percent(1, 2), '50.0%');
  assert.strictEqual(T.percent(1, 3), '33.3%');
  assert.strictEqual(T.percent(1, 300), '0.33%');
  assert.strictEqual(T.percent(1, 30000), '0.0033%');
  assert.strictEqual(T.percent(0, 5), '0.0%');
});

test('duration: from microseconds to seconds', () => {
  assert.strictEqual(T.duration(0), '0 µs');
  assert.strictEqual(T.duration(1500), '2 µs');
  assert.strictEqual(T.duration(1.5e6), '1.5 ms');
  assert.strictEqual(T.duration(250e6), '250 ms');
  assert.strictEqual(T.duration(4.567e9), '4.57 s');
  assert.strictEqual(T.duration(123e9), '123 s');
});

test('commandLine: plain words bare, others single-quoted for a shell', () => {
  assert.strictEqual(T.commandLine(['python3', '-c', 'x=1']), 'python3 -c x=1');
  assert.strictEqual(T.commandLine(['echo', 'a b', "it's", '']), "echo 'a b' 'it'\\''s' ''");
  assert.strictEqual(T.commandLine(['/usr/bin/env', 'A=1', '$HOME']), "/usr/bin/env A=1 '$HOME'");
});

test('basename', () => {
  assert.strictEqual(T.basename('/usr/lib/libc.so.6'), 'libc.so.6');
  assert.strictEqual(T.basename('prog'), 'prog');
  assert.strictEqual(T.basename('dir/'), '');
});

test('shortPath: a path that identifies the file, never a bare __init__.py', () => {
  const sp = T.shortPath;
  assert.strictEqual(sp('/venv/lib/python3.11/site-packages/torch/nn/modules/linear.py'),
    'torch/nn/modules/linear.py');
  assert.strictEqual(sp('/usr/lib/python3/dist-packages/numpy/__init__.py'), 'numpy/__init__.py');
  assert.strictEqual(sp('/usr/lib/python3.11/json/__init__.py'), 'json/__init__.py');
  assert.strictEqual(sp('/home/u/proj/pkg/__init__.py'), 'pkg/__init__.py');
  assert.strictEqual(sp('/home/u/proj/train.py'), 'train.py');
  assert.strictEqual(sp('<frozen runpy>'), '<frozen runpy>');
});

// ---- decode.js ---------------------------------------------------------------

// A block as src/report/flamegraph.c writes it (the fields decode.js reads):
//   0 all
//   1 main            (loc 0)
//   2   alloc_a       (loc 1)  self rows: thread 0: 100 B x1, thread 1: 50 B x2
//   3   helper        (loc 2)
//   4     alloc_a     (loc 1)  thread 1: 7 B x1
//   5 other           (loc 3, kind other; 2 frames merged)   thread 0: 3 B x3
function block(extra) {
  return Object.assign({
    format: 1,
    strings: ['main', 'prog.c', '/bin/prog', 'alloc_a', 'helper'],
    locs: {
      fn: [0, 3, 4, 0],
      file: [1, 1, 1, -1],
      line: [10, 20, 30, 0],
      mod: [2, 2, 2, -1],
      kind: [0, 0, 0, 8],
    },
    nodes: { up: [0, 1, 1, 2, 1, 5], loc: [0, 0, 1, 2, 1, 3], merged: { 5: 2 } },
    self: { node: [2, 0, 2, 1], thread: [0, 1, 1, 0], bytes: [100, 50, 7, 3], count: [1, 2, 1, 3] },
  }, extra || {});
}

test('decode: parents, depths and children from the up deltas', () => {
  const m = T.decode(block());
  assert.strictEqual(m.n, 6);
  assert.deepStrictEqual(Array.from(m.parent), [-1, 0, 1, 1, 3, 0]);
  assert.deepStrictEqual(Array.from(m.depth), [0, 1, 2, 2, 3, 1]);
  assert.strictEqual(m.maxDepth, 3);
  const kids = (i) => Array.from(m.childList.slice(m.childStart[i], m.childStart[i + 1]));
  assert.deepStrictEqual(kids(0), [1, 5]);
  assert.deepStrictEqual(kids(1), [2, 3]);
  assert.deepStrictEqual(kids(3), [4]);
  assert.deepStrictEqual(kids(4), []);
  assert.deepStrictEqual(Array.from(m.merged), [0, 0, 0, 0, 0, 2]);
});

test('decode: names, files, lines, modules and kinds through the string table', () => {
  const m = T.decode(block());
  assert.strictEqual(m.fnOf(0), 'all');
  assert.strictEqual(m.kindOf(0), T.K_PROCESS);
  assert.strictEqual(m.fnOf(4), 'alloc_a');
  assert.strictEqual(m.fileOf(4), 'prog.c');
  assert.strictEqual(m.lineOf(3), 30);
  assert.strictEqual(m.modOf(1), '/bin/prog');
  assert.strictEqual(m.fnOf(5), 'main'); // loc 3 names string 0 too
  assert.strictEqual(m.fileOf(5), ''); // -1: none
  assert.strictEqual(m.modOf(5), '');
  assert.strictEqual(m.kindOf(5), T.K_OTHER);
  assert.strictEqual(T.KINDS[m.kindOf(5)], 'other');
});

test('labelOf: Python boxes read "func file:line", native ones their function', () => {
  const b = block();
  b.strings.push('/venv/lib/python3.11/site-packages/pkg/__init__.py', '<module>');
  b.locs.fn[1] = 6; // alloc_a -> <module>, a Python frame in pkg/__init__.py
  b.locs.file[1] = 5;
  b.locs.kind[1] = T.K_PYTHON;
  const m = T.decode(b);
  assert.strictEqual(m.labelOf(0), 'all');
  assert.strictEqual(m.labelOf(1), 'main'); // native: the function alone
  assert.strictEqual(m.labelOf(2), '<module> pkg/__init__.py:20');
  assert.strictEqual(m.labelOf(5), 'main'); // synthetic: no file
  assert.strictEqual(m.fnOf(2), '<module>');
});

test('values: self rows by node delta, totals up the tree, thread filter', () => {
  const m = T.decode(block());
  assert.deepStrictEqual(Array.from(m.self.node), [2, 2, 4, 5]);
  let v = T.values(m, { thread: -1 });
  assert.deepStrictEqual(Array.from(v.selfB), [0, 0, 150, 0, 7, 3]);
  assert.deepStrictEqual(Array.from(v.totB), [160, 157, 150, 7, 7, 3]);
  assert.deepStrictEqual(Array.from(v.totC), [7, 4, 3, 1, 1, 3]);
  v = T.values(m, { thread: 1 });
  assert.deepStrictEqual(Array.from(v.totB), [57, 57, 50, 7, 7, 0]);
  assert.deepStrictEqual(Array.from(v.selfC), [0, 0, 2, 0, 1, 0]);
});

test('values: without a thread column every row counts', () => {
  const b = block();
  delete b.self.thread;
  const m = T.decode(b);
  assert.strictEqual(m.self.thread, null);
  assert.deepStrictEqual(Array.from(T.values(m, { thread: 0 }).totB), [160, 157, 150, 7, 7, 3]);
});

// Temporal: 4 buckets, high points 10, 40, 40, 20 (bucket 1 is the first of
// the tie). Endpoints are 2 * bucket + (1 if after the bucket's high point);
// 8 (2 * buckets) is never freed. Rows (node, from, to, bytes):
//   A (2, 0, 3, 1)   live at the high points of buckets 0 and 1
//   B (2, 1, 2, 2)   allocated after bucket 0's, freed before bucket 1's
//   C (4, 2, 8, 4)   live from bucket 1's high point on, never freed
//   D (5, 5, 6, 8)   inside bucket 2 and 3, between high points
//   E (2, 7, 8, 16)  allocated after the last high point, never freed
function temporalBlock() {
  const b = block({
    temporal: {
      buckets: 4,
      bucket_ns: 1000,
      high: [10, 40, 40, 20],
      high_t: [500, 1200, 2900, 3100],
      rows: {
        node: [2, 0, 2, 1, -3], // 2, 2, 4, 5, 2 as deltas
        thread: [0, 0, 1, 0, 0],
        from: [0, 1, 2, 5, 7],
        to: [3, 2, 8, 6, 8],
        bytes: [1, 2, 4, 8, 16],
        count: [1, 1, 1, 1, 1],
      },
    },
  });
  delete b.self;
  return b;
}

test('temporal: rows decoded, the high bucket is the first highest of a range', () => {
  const m = T.decode(temporalBlock());
  assert.strictEqual(m.self, null);
  assert.strictEqual(m.temporal.nb, 4);
  assert.strictEqual(m.temporal.bucketNs, 1000);
  assert.deepStrictEqual(m.temporal.highT, [500, 1200, 2900, 3100]);
  assert.deepStrictEqual(Array.from(m.temporal.rows.node), [2, 2, 4, 5, 2]);
  assert.strictEqual(T.highBucket(m.temporal, 0, 3), 1);
  assert.strictEqual(T.highBucket(m.temporal, 2, 3), 2);
  assert.strictEqual(T.highBucket(m.temporal, 3, 3), 3);
});

test('temporal: peak, leaks and allocated views over bucket ranges', () => {
  const m = T.decode(temporalBlock());
  const self = (range, thread = -1) => Array.from(T.values(m, { thread, range }).selfB);
  // No range: the peak of the whole run, at bucket 1's high point.
  assert.deepStrictEqual(self(null), [0, 0, 1, 0, 4, 0]);
  assert.deepStrictEqual(self({ s: 0, e: 3, mode: 'peak' }), [0, 0, 1, 0, 4, 0]);
  assert.deepStrictEqual(self({ s: 0, e: 0, mode: 'peak' }), [0, 0, 1, 0, 0, 0]);
  assert.deepStrictEqual(self({ s: 2, e: 3, mode: 'peak' }), [0, 0, 0, 0, 4, 0]);
  assert.deepStrictEqual(self({ s: 0, e: 3, mode: 'peak' }, 0), [0, 0, 1, 0, 0, 0]);
  // Allocated in the range and not freed by its end.
  assert.deepStrictEqual(self({ s: 0, e: 1, mode: 'leaks' }), [0, 0, 0, 0, 4, 0]);
  assert.deepStrictEqual(self({ s: 2, e: 3, mode: 'leaks' }), [0, 0, 16, 0, 0, 0]);
  assert.deepStrictEqual(self({ s: 0, e: 3, mode: 'leaks' }), [0, 0, 16, 0, 4, 0]);
  // Allocated in the range.
  assert.deepStrictEqual(self({ s: 0, e: 1, mode: 'allocated' }), [0, 0, 3, 0, 4, 0]);
  assert.deepStrictEqual(self({ s: 2, e: 3, mode: 'allocated' }), [0, 0, 16, 0, 0, 8]);
  const v = T.values(m, { thread: -1, range: { s: 0, e: 3, mode: 'allocated' } });
  assert.deepStrictEqual(Array.from(v.totB), [31, 23, 19, 4, 4, 8]);
});

test('decode refuses a data block of another format version', () => {
  assert.strictEqual(T.DATA_FORMAT, 1);
  assert.throws(() => T.decode(block({ format: 2 })), /data format 2: this viewer reads format 1/);
  assert.throws(() => T.decode(block({ format: undefined })), /data format undefined/);
});
