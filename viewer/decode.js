// SPDX-License-Identifier: MIT
//
// decode.js - the data block of the page (src/report/flamegraph.c writes it,
// docs/FLAMEGRAPH_DATA.md specifies it) turned into typed arrays, and the values of every node for one view: a
// thread filter, and with --temporal a range of time buckets. Must not: draw
// or touch the DOM beyond reading the data element.
(function () {
  'use strict';
  const T = (window.Trk = window.Trk || {});

  // Kinds of locations, as numbered by flamegraph_model.h (enum trk_fg_kind):
  // 'Python' is Python code, 'Python interpreter' the interpreter's native
  // frames; 'import' frames are --by-import's synthetic roots.
  T.KINDS = ['application', 'library', 'libc/runtime', 'Python interpreter', 'Python', 'GPU',
    'unknown', 'process', 'other', 'import'];
  T.K_PYTHON = 4;
  T.K_PROCESS = 7;
  T.K_OTHER = 8;
  T.K_IMPORT = 9;

  // The data block's "format" this viewer reads (docs/FLAMEGRAPH_DATA.md).
  // The page embeds its own viewer, so a mismatch means a page assembled
  // from parts of different builds: say so rather than draw nonsense.
  T.DATA_FORMAT = 1;

  // Column of node ids written as deltas from the previous row.
  function undelta(col) {
    const out = new Int32Array(col.length);
    let prev = 0;
    for (let i = 0; i < col.length; i++) out[i] = prev = prev + col[i];
    return out;
  }

  function rows(r, temporal) {
    const out = {
      n: r.node.length,
      node: undelta(r.node),
      thread: r.thread ? Int32Array.from(r.thread) : null,
      bytes: Float64Array.from(r.bytes),
      count: Float64Array.from(r.count),
    };
    if (temporal) {
      out.from = Int32Array.from(r.from);
      out.to = Int32Array.from(r.to);
    }
    return out;
  }

  T.decode = function (d) {
    if (d.format !== T.DATA_FORMAT)
      throw new Error('flamegraph data format ' + d.format + ': this viewer reads format ' + T.DATA_FORMAT);
    const n = d.nodes.up.length;
    const parent = new Int32Array(n);
    const depth = new Int32Array(n);
    const loc = Int32Array.from(d.nodes.loc);
    const nchild = new Int32Array(n + 1);
    let maxDepth = 0;
    parent[0] = -1;
    for (let i = 1; i < n; i++) {
      const p = i - d.nodes.up[i];
      parent[i] = p;
      depth[i] = depth[p] + 1;
      if (depth[i] > maxDepth) maxDepth = depth[i];
      nchild[p]++;
    }
    // Children in one array (CSR): childStart[i] .. childStart[i + 1].
    const childStart = new Int32Array(n + 1);
    for (let i = 0; i < n; i++) childStart[i + 1] = childStart[i] + nchild[i];
    const fill = childStart.slice(0, n);
    const childList = new Int32Array(Math.max(n - 1, 0));
    for (let i = 1; i < n; i++) childList[fill[parent[i]]++] = i;

    const S = d.strings;
    const L = d.locs;
    const merged = new Int32Array(n);
    for (const k of Object.keys(d.nodes.merged)) merged[+k] = d.nodes.merged[k];
    const m = {
      raw: d,
      n,
      parent,
      depth,
      loc,
      maxDepth,
      childStart,
      childList,
      merged,
      fnOf: (i) => (i === 0 ? 'all' : S[L.fn[loc[i]]]),
      fileOf: (i) => (i === 0 || L.file[loc[i]] < 0 ? '' : S[L.file[loc[i]]]),
      lineOf: (i) => (i === 0 ? 0 : L.line[loc[i]]),
      modOf: (i) => (i === 0 || L.mod[loc[i]] < 0 ? '' : S[L.mod[loc[i]]]),
      kindOf: (i) => (i === 0 ? T.K_PROCESS : L.kind[loc[i]]),
      // A box's text: a Python frame reads "main train.py:52" (the line is
      // what a Python user looks for), others their function.
      labelOf: (i) => {
        const fn = i === 0 ? 'all' : S[L.fn[loc[i]]];
        if (i === 0 || L.kind[loc[i]] !== T.K_PYTHON || L.file[loc[i]] < 0) return fn;
        const line = L.line[loc[i]];
        return fn + ' ' + T.shortPath(S[L.file[loc[i]]]) + (line ? ':' + line : '');
      },
      temporal: d.temporal
        ? {
            nb: d.temporal.buckets,
            bucketNs: d.temporal.bucket_ns,
            high: d.temporal.high,
            highT: d.temporal.high_t,
            rows: rows(d.temporal.rows, true),
          }
        : null,
      self: d.self ? rows(d.self, false) : null,
    };
    return m;
  };

  // The bucket whose high point is highest in [s, e] (the first on a tie).
  T.highBucket = function (tm, s, e) {
    let best = s;
    for (let k = s + 1; k <= e; k++) if (tm.high[k] > tm.high[best]) best = k;
    return best;
  };

  // Self and total bytes and counts of every node for a view:
  // view.thread (-1: all), view.range ({s, e, mode} in buckets, temporal only).
  T.values = function (m, view) {
    const selfB = new Float64Array(m.n);
    const selfC = new Float64Array(m.n);
    const th = view.thread;
    if (m.temporal) {
      const tm = m.temporal;
      const r = tm.rows;
      const s = view.range ? view.range.s : 0;
      const e = view.range ? view.range.e : tm.nb - 1;
      const mode = view.range ? view.range.mode : 'peak';
      const k = T.highBucket(tm, s, e);
      for (let i = 0; i < r.n; i++) {
        if (th >= 0 && r.thread[i] !== th) continue;
        const f = r.from[i];
        const t = r.to[i];
        let on;
        if (mode === 'peak') on = (f >> 1) + (f & 1) <= k && k < (t >> 1) + (t & 1);
        else if (mode === 'leaks') on = (f >> 1) >= s && (f >> 1) <= e && (t >> 1) > e;
        else on = (f >> 1) >= s && (f >> 1) <= e;
        if (!on) continue;
        selfB[r.node[i]] += r.bytes[i];
        selfC[r.node[i]] += r.count[i];
      }
    } else {
      const r = m.self;
      for (let i = 0; i < r.n; i++) {
        if (th >= 0 && r.thread && r.thread[i] !== th) continue;
        selfB[r.node[i]] += r.bytes[i];
        selfC[r.node[i]] += r.count[i];
      }
    }
    const totB = selfB.slice();
    const totC = selfC.slice();
    for (let i = m.n - 1; i > 0; i--) {
      totB[m.parent[i]] += totB[i];
      totC[m.parent[i]] += totC[i];
    }
    return { selfB, selfC, totB, totC };
  };

  T.load = function () {
    const el = document.getElementById('trk-data');
    return T.decode(JSON.parse(el.textContent));
  };
})();
