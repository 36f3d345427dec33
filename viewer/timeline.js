// SPDX-License-Identifier: MIT
//
// timeline.js - the memory-over-time chart: heap, anonymous mmap and RSS
// lines, the heap peak marked, a hover read-out and, in temporal mode, a
// brush that selects a range of time buckets. Must not: compute flamegraph
// values (it reports the range; ui.js recomputes), or build DOM text from
// data except through textContent.
(function () {
  'use strict';
  const T = (window.Trk = window.Trk || {});

  const PAD = { l: 70, r: 12, t: 10, b: 20 };
  const GPU_COLORS = ['#8e44ad', '#16a085', '#c0392b', '#7f8c8d'];

  // The lines of a timeline: heap, anonymous mmap, RSS, then one per GPU
  // device when the data has them (tl.gpu: [{device, live}]).
  T.series = function (tl) {
    const out = [
      { label: 'heap', color: '#2b63d9', values: tl.heap, main: true },
      { label: 'anonymous mmap', color: '#e0862a', values: tl.mmap },
      { label: 'RSS', color: '#8c95a8', values: tl.rss },
    ];
    (tl.gpu || []).forEach((g, i) =>
      out.push({
        label: 'GPU ' + (g.device < 0 ? '(unknown device)' : g.device),
        color: GPU_COLORS[i % GPU_COLORS.length],
        values: g.live,
      })
    );
    return out;
  };

  class Timeline {
    // tl: the data's timeline; end: the run's length in ns; tm: the
    // temporal block or null; onRange(range or null) when the brush moves.
    constructor(canvas, tip, tl, end, tm, onRange) {
      this.c = canvas;
      this.tip = tip;
      this.tl = tl;
      this.tm = tm;
      this.onRange = onRange;
      this.end = Math.max(end, tl.t.length ? tl.t[tl.t.length - 1] : 0, 1);
      if (tm) this.end = Math.max(this.end, 1);
      this.range = null; // {s, e} buckets
      this.high = -1; // bucket whose high point the flamegraph shows
      let max = 1;
      this.series = T.series(tl);
      for (const s of this.series) for (const v of s.values) if (v > max) max = v;
      this.max = max * 1.08;
      this.drag = null;
      canvas.addEventListener('mousemove', (e) => this.move(e));
      canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
      if (tm) {
        canvas.classList.add('brushable');
        canvas.addEventListener('mousedown', (e) => this.down(e));
        window.addEventListener('mouseup', (e) => this.up(e));
      }
    }

    // CSS px within the canvas of a time (ns after the start).
    xOf(t) {
      return PAD.l + ((this.w - PAD.l - PAD.r) * t) / this.end;
    }

    tOf(x) {
      const f = (x - PAD.l) / (this.w - PAD.l - PAD.r);
      return Math.min(Math.max(f, 0), 1) * this.end;
    }

    yOf(v) {
      return PAD.t + (this.h - PAD.t - PAD.b) * (1 - v / this.max);
    }

    bucketOf(t) {
      const tm = this.tm;
      return Math.min(tm.nb - 1, Math.max(0, Math.floor(t / tm.bucketNs)));
    }

    draw() {
      const c = this.c;
      const dpr = window.devicePixelRatio || 1;
      this.w = c.clientWidth;
      this.h = c.clientHeight;
      c.width = Math.round(this.w * dpr);
      c.height = Math.round(this.h * dpr);
      const ctx = c.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, this.w, this.h);
      ctx.font = '11px system-ui, "DejaVu Sans", sans-serif';
      this.axes(ctx);
      if (this.range) {
        const tm = this.tm;
        const x0 = this.xOf(this.range.s * tm.bucketNs);
        const x1 = this.xOf(Math.min((this.range.e + 1) * tm.bucketNs, this.end));
        ctx.fillStyle = 'rgba(43, 99, 217, 0.12)';
        ctx.fillRect(x0, PAD.t, Math.max(x1 - x0, 1), this.h - PAD.t - PAD.b);
      }
      const tl = this.tl;
      for (const s of this.series.slice().reverse()) {
        const v = s.values;
        if (!v.some((x) => x > 0)) continue;
        ctx.beginPath();
        for (let i = 0; i < v.length; i++) {
          const x = this.xOf(tl.t[i]);
          const y = this.yOf(v[i]);
          if (i) ctx.lineTo(x, y);
          else ctx.moveTo(x, y);
        }
        ctx.strokeStyle = s.color;
        ctx.lineWidth = s.main ? 1.8 : 1.2;
        ctx.stroke();
      }
      // The heap peak.
      const px = this.xOf(tl.peak_t);
      const py = this.yOf(tl.peak_heap);
      ctx.strokeStyle = '#c0392b';
      ctx.setLineDash([3, 3]);
      ctx.beginPath();
      ctx.moveTo(px, PAD.t);
      ctx.lineTo(px, this.h - PAD.b);
      ctx.stroke();
      ctx.setLineDash([]);
      ctx.fillStyle = '#c0392b';
      ctx.beginPath();
      ctx.arc(px, py, 3.5, 0, 2 * Math.PI);
      ctx.fill();
      const label = 'peak ' + T.bytes(tl.peak_heap);
      const lw = ctx.measureText(label).width;
      ctx.fillText(label, px + 6 + lw > this.w - PAD.r ? px - 6 - lw : px + 6, PAD.t + 10);
      // The high point shown in temporal mode.
      if (this.tm && this.high >= 0) {
        const hx = this.xOf(this.tm.highT[this.high]);
        ctx.strokeStyle = '#d4a106';
        ctx.lineWidth = 2;
        ctx.beginPath();
        ctx.moveTo(hx, PAD.t);
        ctx.lineTo(hx, this.h - PAD.b);
        ctx.stroke();
      }
    }

    axes(ctx) {
      ctx.strokeStyle = '#e3e6ec';
      ctx.fillStyle = '#5b6475';
      ctx.lineWidth = 1;
      ctx.textBaseline = 'middle';
      for (let k = 0; k <= 4; k++) {
        const v = (this.max / 1.08) * (k / 4);
        const y = Math.round(this.yOf(v)) + 0.5;
        ctx.beginPath();
        ctx.moveTo(PAD.l, y);
        ctx.lineTo(this.w - PAD.r, y);
        ctx.stroke();
        const s = T.bytes(v);
        ctx.fillText(s, PAD.l - 6 - ctx.measureText(s).width, y);
      }
      ctx.textBaseline = 'alphabetic';
      for (let k = 0; k <= 5; k++) {
        const t = (this.end * k) / 5;
        const s = T.duration(t);
        const x = this.xOf(t);
        const w = ctx.measureText(s).width;
        ctx.fillText(s, Math.min(Math.max(x - w / 2, PAD.l), this.w - PAD.r - w), this.h - 5);
      }
    }

    pos(e) {
      const r = this.c.getBoundingClientRect();
      return { x: e.clientX - r.left, y: e.clientY - r.top };
    }

    move(e) {
      const p = this.pos(e);
      if (this.drag) {
        this.drag.x1 = p.x;
        this.setRangeFromDrag(false);
      }
      const tl = this.tl;
      const t = this.tOf(p.x);
      let i = 0;
      while (i + 1 < tl.t.length && tl.t[i + 1] <= t) i++;
      const tip = this.tip;
      tip.replaceChildren();
      const add = (k, v) => {
        const row = document.createElement('div');
        row.className = 'row';
        const a = document.createElement('span');
        a.textContent = k;
        const b = document.createElement('span');
        b.textContent = v;
        row.append(a, b);
        tip.append(row);
      };
      add('time', T.duration(t));
      if (tl.t.length) for (const s of this.series) add(s.label, T.bytes(s.values[i]));
      if (this.tm) add('', 'drag to pick a time range');
      tip.hidden = false;
      const left = p.x + 14 + 190 > this.w ? p.x - 200 : p.x + 14;
      tip.style.left = left + 'px';
      tip.style.top = '8px';
    }

    down(e) {
      const p = this.pos(e);
      if (p.x < PAD.l) return;
      this.drag = { x0: p.x, x1: p.x };
      e.preventDefault();
    }

    up(e) {
      if (!this.drag) return;
      this.drag.x1 = this.pos(e).x;
      this.setRangeFromDrag(true);
      this.drag = null;
    }

    setRangeFromDrag(final) {
      const a = this.bucketOf(this.tOf(Math.min(this.drag.x0, this.drag.x1)));
      const b = this.bucketOf(this.tOf(Math.max(this.drag.x0, this.drag.x1)));
      this.range = { s: a, e: b };
      this.draw();
      if (final) this.onRange(this.range);
    }

    setRange(r) {
      this.range = r;
      this.draw();
    }
  }

  T.Timeline = Timeline;
})();
