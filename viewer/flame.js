// SPDX-License-Identifier: MIT
//
// flame.js - the flamegraph canvas: layout of the visible frames for a zoom
// root, drawing (icicle or flame), hit testing, hover outline and search
// highlight. Frames narrower than MIN_W pixels are neither drawn nor
// descended into, and rectangles are filled one colour at a time, so a view
// of 100 000 frames stays cheap. Must not: build DOM text from data (labels
// are canvas text), or know about controls (ui.js wires those).
(function () {
  'use strict';
  const T = (window.Trk = window.Trk || {});

  const MIN_W = 0.35; // CSS px
  const LABEL_W = 28; // frames at least this wide get a label
  const SHADES = 6; // lightness steps per kind, picked by name hash
  // [hue, saturation, lightness] per kind (decode.js T.KINDS).
  const BASE = [
    [18, 80, 62], // application
    [45, 82, 56], // library
    [212, 24, 70], // libc/runtime
    [138, 46, 56], // Python interpreter
    [207, 62, 64], // Python code
    [272, 55, 67], // GPU
    [0, 0, 74], // unknown
    [196, 28, 78], // process / root
    [0, 0, 88], // other
    [170, 42, 62], // import (--by-import)
  ];
  const MATCH = BASE.length * SHADES; // colour index of search matches
  const COLORS = [];
  for (let k = 0; k < BASE.length; k++)
    for (let s = 0; s < SHADES; s++) {
      const [h, sat, l] = BASE[k];
      COLORS.push('hsl(' + (h + s * 3) + ',' + sat + '%,' + (l - 4 + s * 1.6) + '%)');
    }
  COLORS.push('hsl(312,85%,62%)');

  T.kindColor = (kind) => COLORS[kind * SHADES + 2];
  T.MATCH_COLOR = COLORS[MATCH];

  function hash(s) {
    let h = 2166136261;
    for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 16777619);
    return h >>> 0;
  }

  class Flame {
    constructor(canvas, over, model) {
      this.canvas = canvas;
      this.over = over;
      this.flame = false; // orientation: false = icicle (root on top)
      this.stats = { frames: 0, layoutMs: 0, drawMs: 0 };
      this.cap = 0;
      this.grow(1024);
      this.setModel(model);
    }

    // Another tree (the page's memory space selector): zoom, search and
    // hover refer to its nodes, so they start over; setValues must follow.
    setModel(model) {
      this.m = model;
      this.zoom = 0;
      this.match = null; // Uint8Array of matched nodes, or null
      this.hover = -1;
      this.hoverRect = -1;
      // Colour index per node: kind and a shade from the function's name.
      const n = model.n;
      this.color = new Uint16Array(n);
      const byLoc = new Map();
      for (let i = 0; i < n; i++) {
        const l = i === 0 ? -1 : model.loc[i];
        let c = byLoc.get(l);
        if (c === undefined) {
          c = model.kindOf(i) * SHADES + (hash(model.fnOf(i)) % SHADES);
          byLoc.set(l, c);
        }
        this.color[i] = c;
      }
    }

    grow(cap) {
      const old = this.cap ? [this.rx, this.rw, this.rn] : null;
      this.rx = new Float64Array(cap);
      this.rw = new Float64Array(cap);
      this.rn = new Int32Array(cap);
      if (old) {
        this.rx.set(old[0]);
        this.rw.set(old[1]);
        this.rn.set(old[2]);
      }
      this.cap = cap;
    }

    // New values (decode.js T.values); metric 'bytes' or 'count'.
    setValues(v, metric) {
      this.v = v;
      this.tot = metric === 'count' ? v.totC : v.totB;
      this.self = metric === 'count' ? v.selfC : v.selfB;
      // Children largest first, once per set of values.
      const m = this.m;
      const tot = this.tot;
      this.kids = m.childList.slice();
      for (let i = 0; i < m.n; i++) {
        const a = m.childStart[i];
        const b = m.childStart[i + 1];
        if (b - a > 1) this.kids.subarray(a, b).sort((x, y) => tot[y] - tot[x] || x - y);
      }
    }

    // Visible rectangles for the current zoom, in rows by depth. Ancestors
    // of the zoom root span the whole width, as in d3-flame-graph.
    layout() {
      const t0 = performance.now();
      const m = this.m;
      const tot = this.tot;
      // The box's width, not the canvas's: draw() pins the canvas's own.
      const W = Math.max(this.canvas.parentElement.clientWidth, 50);
      this.width = W;
      let n = 0;
      const push = (node, x, w) => {
        if (n === this.cap) this.grow(this.cap * 2);
        this.rx[n] = x;
        this.rw[n] = w;
        this.rn[n++] = node;
      };
      for (let i = this.zoom; i >= 0; i = m.parent[i]) push(i, 0, W);
      // Ancestors were pushed innermost first; put them root first.
      this.rn.subarray(0, n).reverse();
      let maxRow = m.depth[this.zoom];
      if (tot[this.zoom] > 0) {
        const scale = W / tot[this.zoom];
        const stack = [this.zoom];
        const xs = [0];
        while (stack.length) {
          const node = stack.pop();
          const x = xs.pop();
          if (node !== this.zoom) {
            push(node, x, tot[node] * scale);
            if (m.depth[node] > maxRow) maxRow = m.depth[node];
          }
          // Children pushed right to left: the leftmost is drawn first, so
          // every row lists its rectangles by increasing x.
          const a = m.childStart[node];
          const b = m.childStart[node + 1];
          let cx = x;
          const kept = [];
          for (let k = a; k < b; k++) {
            const c = this.kids[k];
            const w = tot[c] * scale;
            if (w < MIN_W) break; // sorted: the rest are smaller
            kept.push(c, cx);
            cx += w;
          }
          for (let k = kept.length - 2; k >= 0; k -= 2) {
            stack.push(kept[k]);
            xs.push(kept[k + 1]);
          }
        }
      }
      this.n = n;
      this.rows = maxRow + 1;
      // Rows index for hit testing.
      const cnt = new Int32Array(this.rows + 1);
      for (let i = 0; i < n; i++) cnt[m.depth[this.rn[i]] + 1]++;
      for (let r = 0; r < this.rows; r++) cnt[r + 1] += cnt[r];
      this.rowStart = cnt.slice();
      this.rowIdx = new Int32Array(n);
      for (let i = 0; i < n; i++) this.rowIdx[cnt[m.depth[this.rn[i]]]++] = i;
      const dpr = window.devicePixelRatio || 1;
      this.rowH = Math.max(6, Math.min(18, Math.floor(30000 / (this.rows * dpr))));
      this.stats.layoutMs = performance.now() - t0;
    }

    rowY(row) {
      return (this.flame ? this.rows - 1 - row : row) * this.rowH;
    }

    draw() {
      const t0 = performance.now();
      const m = this.m;
      const dpr = window.devicePixelRatio || 1;
      const W = this.width;
      const H = this.rows * this.rowH;
      for (const c of [this.canvas, this.over]) {
        c.width = Math.round(W * dpr);
        c.height = Math.round(H * dpr);
        c.style.width = W + 'px';
        c.style.height = H + 'px';
      }
      const ctx = this.canvas.getContext('2d', { alpha: false });
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = '#fff';
      ctx.fillRect(0, 0, W, H);
      // Rectangles grouped by colour: one fillStyle change per colour. Plain
      // fillRect calls, not one path per colour: Skia rasterises a path of
      // thousands of rectangles far more slowly than the rectangles.
      const ncol = COLORS.length;
      const byCol = new Int32Array(ncol + 1);
      const col = new Uint16Array(this.n);
      for (let i = 0; i < this.n; i++) {
        const node = this.rn[i];
        col[i] = this.match && this.match[node] ? MATCH : this.color[node];
        byCol[col[i] + 1]++;
      }
      for (let c = 0; c < ncol; c++) byCol[c + 1] += byCol[c];
      const order = new Int32Array(this.n);
      const at = byCol.slice();
      for (let i = 0; i < this.n; i++) order[at[col[i]]++] = i;
      const h = this.rowH - 1;
      for (let c = 0; c < ncol; c++) {
        if (byCol[c] === byCol[c + 1]) continue;
        ctx.fillStyle = COLORS[c];
        for (let k = byCol[c]; k < byCol[c + 1]; k++) {
          const i = order[k];
          const w = this.rw[i];
          ctx.fillRect(this.rx[i], this.rowY(m.depth[this.rn[i]]), w > 3 ? w - 1 : w, h);
        }
      }
      if (this.rowH >= 11) {
        ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
        ctx.textBaseline = 'middle';
        ctx.fillStyle = '#1b1f29';
        const cw = ctx.measureText('abcdefghij').width / 10;
        for (let i = 0; i < this.n; i++) {
          const w = this.rw[i];
          if (w < LABEL_W) continue;
          const node = this.rn[i];
          const fit = Math.floor((w - 6) / cw);
          let s = m.labelOf(node);
          if (m.kindOf(node) === T.K_OTHER) s = 'other (' + m.merged[node] + ' frames)';
          if (s.length > fit) s = fit > 1 ? s.slice(0, fit - 1) + '…' : '';
          if (s) ctx.fillText(s, this.rx[i] + 3, this.rowY(m.depth[node]) + h / 2 + 0.5);
        }
      }
      this.stats.frames = this.n;
      this.stats.drawMs = performance.now() - t0;
      this.drawHover();
    }

    drawHover() {
      const ctx = this.over.getContext('2d');
      const dpr = window.devicePixelRatio || 1;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, this.width, this.rows * this.rowH);
      const i = this.hoverRect;
      if (this.hover < 0 || i === undefined || i < 0) return;
      ctx.strokeStyle = '#1b1f29';
      ctx.lineWidth = 1.5;
      const row = this.m.depth[this.rn[i]];
      ctx.strokeRect(this.rx[i] + 0.75, this.rowY(row) + 0.75, Math.max(this.rw[i] - 2, 1), this.rowH - 2.5);
    }

    // The rectangle under (x, y) in CSS px of the canvas, or -1.
    hit(x, y) {
      if (y < 0 || x < 0) return -1;
      let row = Math.floor(y / this.rowH);
      if (this.flame) row = this.rows - 1 - row;
      if (row < 0 || row >= this.rows) return -1;
      let lo = this.rowStart[row];
      let hi = this.rowStart[row + 1] - 1;
      while (lo <= hi) {
        const mid = (lo + hi) >> 1;
        const i = this.rowIdx[mid];
        if (x < this.rx[i]) hi = mid - 1;
        else if (x >= this.rx[i] + this.rw[i]) lo = mid + 1;
        else return i;
      }
      return -1;
    }

    setHover(rect) {
      this.hoverRect = rect;
      this.hover = rect >= 0 ? this.rn[rect] : -1;
      this.drawHover();
    }

    // Drawn rectangles, for the test hook.
    frames() {
      const out = [];
      for (let i = 0; i < this.n; i++) {
        const node = this.rn[i];
        out.push({
          node,
          name: this.m.fnOf(node),
          label: this.m.labelOf(node),
          kind: T.KINDS[this.m.kindOf(node)],
          depth: this.m.depth[node],
          x: this.rx[i],
          y: this.rowY(this.m.depth[node]),
          w: this.rw[i],
          h: this.rowH - 1,
          value: this.tot[node],
          matched: !!(this.match && this.match[node]),
        });
      }
      return out;
    }
  }

  T.Flame = Flame;
})();
