// SPDX-License-Identifier: MIT
//
// timeline.js - the memory-over-time chart: heap, anonymous mmap and RSS
// lines (over several processes: each process's own lines, one process's,
// or their labelled sum), series hidden from the legend, a linear or log
// scale, the heap peak marked, a hover read-out and, in temporal mode, a
// brush that selects a range of time buckets. Must not: compute flamegraph
// values (it reports the range; ui.js recomputes), or build DOM text from
// data except through textContent.
(function () {
  'use strict';
  const T = (window.Trk = window.Trk || {});

  const PAD = { l: 70, r: 12, t: 10, b: 20 };
  const GPU_COLORS = ['#8e44ad', '#16a085', '#c0392b', '#7f8c8d'];
  const PROC_COLORS = ['#2b63d9', '#e0862a', '#16a085', '#8e44ad', '#c0392b', '#7f8c8d', '#d4a106', '#1f8fb8'];

  // "pid N prog": a process's line, its program's name (two images of one
  // pid, before and after exec, read apart).
  T.procName = function (p, caps) {
    const c = caps && caps[p.cap];
    const argv0 = c && (c.argv && c.argv.length ? c.argv[0] : c.exe);
    return 'pid ' + p.pid + (argv0 ? ' ' + String(argv0).split('/').pop() : '');
  };

  // The lines of a timeline. view (several captures, tl.procs): 'each'
  // (each process's heap), 'sum' (heap, mmap and RSS added over the
  // processes, labelled so: summed RSS counts shared pages once per
  // process) or a process's index in tl.procs (its heap, mmap and RSS).
  // One capture: heap, anonymous mmap, RSS, then one per GPU device when
  // the data has them (tl.gpu: [{device, live}]).
  T.series = function (tl, view, caps) {
    const procs = tl.procs || [];
    if (procs.length && view === 'each')
      return procs.map((p, i) => ({
        label: T.procName(p, caps) + ' heap',
        color: PROC_COLORS[i % PROC_COLORS.length],
        values: p.heap,
        main: true,
      }));
    if (procs.length && typeof view === 'number' && procs[view]) {
      const p = procs[view];
      const who = ', ' + T.procName(p, caps);
      return [
        { label: 'heap' + who, color: '#2b63d9', values: p.heap, main: true },
        { label: 'anonymous mmap' + who, color: '#e0862a', values: p.mmap },
        { label: 'RSS' + who, color: '#8c95a8', values: p.rss },
      ];
    }
    const sum = procs.length ? ', sum of ' + (procs.length + (tl.procs_omitted || 0)) + ' processes' : '';
    const out = [
      { label: 'heap' + sum, color: '#2b63d9', values: tl.heap, main: true },
      { label: 'anonymous mmap' + sum, color: '#e0862a', values: tl.mmap },
      { label: 'RSS' + sum, color: '#8c95a8', values: tl.rss },
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
    constructor(canvas, tip, tl, end, tm, onRange, caps) {
      this.c = canvas;
      this.tip = tip;
      this.tl = tl;
      this.tm = tm;
      this.onRange = onRange;
      this.end = Math.max(end, tl.t.length ? tl.t[tl.t.length - 1] : 0, 1);
      if (tm) this.end = Math.max(this.end, 1);
      this.range = null; // {s, e} buckets
      this.high = -1; // bucket whose high point the flamegraph shows
      this.caps = caps;
      // Several processes: each one's heap by default, never one sum
      // passed off as a process's memory.
      this.view = tl.procs && tl.procs.length ? 'each' : 'sum';
      this.hidden = new Set(); // labels of series switched off in the legend
      this.scale = 'linear';
      this.setSeries();
      this.drag = null;
      canvas.addEventListener('mousemove', (e) => this.move(e));
      canvas.addEventListener('mouseleave', () => (this.tip.hidden = true));
      if (tm) {
        canvas.classList.add('brushable');
        canvas.addEventListener('mousedown', (e) => this.down(e));
        window.addEventListener('mouseup', (e) => this.up(e));
      }
    }

    // The series of the view and the scale's top over those shown.
    setSeries() {
      this.series = T.series(this.tl, this.view, this.caps);
      let max = 1;
      for (const s of this.shown()) for (const v of s.values) if (v > max) max = v;
      this.max = max * 1.08;
    }

    shown() {
      return this.series.filter((s) => !this.hidden.has(s.label));
    }

    setView(v) {
      this.view = v;
      this.setSeries();
      this.draw();
    }

    // Shows or hides a series (a legend click); returns whether it is shown.
    toggle(label) {
      if (this.hidden.has(label)) this.hidden.delete(label);
      else this.hidden.add(label);
      this.setSeries();
      this.draw();
      return !this.hidden.has(label);
    }

    setScale(s) {
      this.scale = s === 'log' ? 'log' : 'linear';
      this.draw();
    }

    // The point marked: the peak of what is drawn. One capture or the sum:
    // the data's peak; one process: its heap's highest point; each
    // process: the highest of their peaks, named.
    marker() {
      const tl = this.tl;
      if (this.view === 'sum' || !tl.procs || !tl.procs.length)
        return { t: tl.peak_t, v: tl.peak_heap, label: 'peak ' + T.bytes(tl.peak_heap) };
      let best = null;
      for (const s of this.shown()) {
        if (!s.main) continue;
        s.values.forEach((v, i) => {
          if (!best || v > best.v) best = { t: tl.t[i], v, name: s.label };
        });
      }
      if (!best) return null;
      const who = this.view === 'each' ? best.name.replace(/ heap$/, '') + ' ' : '';
      return { t: best.t, v: best.v, label: 'peak ' + who + T.bytes(best.v) };
    }

    // CSS px within the canvas of a time (ns after the start).
    xOf(t) {
      return PAD.l + ((this.w - PAD.l - PAD.r) * t) / this.end;
    }

    tOf(x) {
      const f = (x - PAD.l) / (this.w - PAD.l - PAD.r);
      return Math.min(Math.max(f, 0), 1) * this.end;
    }

    // Log scale: log(1 + bytes), so that a small heap under a large RSS
    // keeps its shape.
    fracOf(v) {
      return this.scale === 'log' ? Math.log1p(v) / Math.log1p(this.max) : v / this.max;
    }

    yOf(v) {
      return PAD.t + (this.h - PAD.t - PAD.b) * (1 - this.fracOf(v));
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
      for (const s of this.shown().reverse()) {
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
      const mk = this.marker();
      if (mk) this.drawMarker(ctx, mk);
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

    drawMarker(ctx, mk) {
      const px = this.xOf(mk.t);
      const py = this.yOf(mk.v);
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
      const label = mk.label;
      const lw = ctx.measureText(label).width;
      ctx.fillText(label, px + 6 + lw > this.w - PAD.r ? px - 6 - lw : px + 6, PAD.t + 10);
    }

    axes(ctx) {
      ctx.strokeStyle = '#e3e6ec';
      ctx.fillStyle = '#5b6475';
      ctx.lineWidth = 1;
      ctx.textBaseline = 'middle';
      const top = this.max / 1.08;
      for (let k = 0; k <= 4; k++) {
        const v = this.scale === 'log' ? Math.expm1((Math.log1p(top) * k) / 4) : top * (k / 4);
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
      if (tl.t.length) for (const s of this.shown()) add(s.label, T.bytes(s.values[i]));
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
