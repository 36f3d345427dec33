// SPDX-License-Identifier: MIT
//
// ui.js - the page's glue: header facts and warnings, controls (mode,
// thread, metric, orientation, search), zoom with breadcrumbs and Escape,
// tooltips, the temporal range, the memory space (host or GPU, when the
// page carries device trees), and window.trkTest, the small hook the
// browser tests read the page through. Must not: set innerHTML or build
// markup from strings: every text from the capture goes in by textContent.
(function () {
  'use strict';
  const T = window.Trk;
  const $ = (id) => document.getElementById(id);

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  performance.mark('trk:start');
  // m and d are the tree shown: the host one, or a device tree of d.alt
  // (decoded when first chosen; the rest of the data block is shared).
  let m = T.load();
  performance.mark('trk:decoded');
  let d = m.raw;
  const spaces = [m];
  const caps = d.caps;
  const root = caps[0];
  const state = {
    thread: -1,
    metric: 'bytes',
    zoom: 0,
    query: '',
    range: m.temporal ? { s: 0, e: m.temporal.nb - 1 } : null,
    tmode: d.select === 'leaks' || d.select === 'allocated' ? d.select : 'peak',
    match: null,
    matchInfo: null,
  };

  // ---- Header -------------------------------------------------------------

  function header() {
    $('cmd').textContent = T.commandLine(root.argv.length ? root.argv : [root.exe]);
    $('cmd').title = T.commandLine(root.argv);
    const sum = (k) => caps.reduce((a, c) => a + c[k], 0);
    const facts = [];
    if (caps.length > 1) facts.push(['processes', String(caps.length)]);
    else facts.push(['pid', String(root.pid)]);
    facts.push(['duration', T.duration(root.duration_s * 1e9)]);
    if (caps.length > 1) {
      // Each process's own peak; the sum of the processes at one instant
      // is labelled as such.
      facts.push(['largest process peak heap', T.bytes(Math.max(...caps.map((c) => c.peak_heap)))]);
      facts.push(['peak heap, processes together', T.bytes(d.timeline.peak_heap)]);
    }
    else facts.push(['peak heap', T.bytes(root.peak_heap) + ' at ' + T.duration(root.peak_heap_t)]);
    facts.push(['allocations', T.count(sum('allocations'))]);
    facts.push(['allocated', T.bytes(sum('bytes_allocated'))]);
    const atEnd = caps.some((c) => c.leaks_at === 'script_end') ? ' (at the script\'s end)' : '';
    facts.push(['leaked', T.bytes(sum('leaked_bytes')) + ' in ' + T.count(sum('leaked_allocations')) + atEnd]);
    if (root.python) facts.push(['Python', root.python]);
    // Sampled captures (--sample-bytes): every stack figure is an estimate.
    const sampled = Math.max(0, ...caps.map((c) => c.sample_bytes || 0));
    if (sampled) facts.push(['sampled', 'at ' + T.count(sampled) + ' bytes']);
    facts.push(['temporary', T.count(sum('temporary_allocations'))]);
    if (sum('mmap_peak')) facts.push(['peak mmap', T.bytes(Math.max(...caps.map((c) => c.mmap_peak)))]);
    if (sum('rss_peak')) facts.push(['peak RSS', T.bytes(Math.max(...caps.map((c) => c.rss_peak)))]);
    facts.push(['threads', T.count(sum('threads'))]);
    const dl = $('facts');
    for (const [k, v] of facts) {
      const div = el('div');
      div.append(el('dt', '', k), el('dd', '', v));
      dl.append(div);
    }
    const warn = $('warnings');
    for (const c of caps) {
      const who = caps.length > 1 ? 'pid ' + c.pid + ': ' : '';
      const say = (s) => warn.append(el('div', '', who + s));
      if (c.truncated)
        say('the capture is truncated (the program was killed, crashed or the disk filled); ' +
          'the figures cover what was written.');
      if (c.lost_events) say(T.count(c.lost_events) + ' events were lost; the figures undercount.');
      if (c.damaged)
        say(T.count(c.damaged) + ' damaged parts of the capture were skipped (' + T.bytes(c.bytes_lost) + ').');
      // Most of a Python program's objects sit in pymalloc's arenas (mmap):
      // a heap-only view leaves them out, and must say so.
      if (c.pymalloc_arenas && d.spaces === 'heap')
        say('Python objects are not in this view: pymalloc keeps them in arenas (anonymous mappings, ' +
          T.bytes(c.mmap_peak) + ' mapped at the peak of mappings). ' +
          '`tracker flamegraph --mmap` adds the arenas, under the stacks that grew them; ' +
          '`tracker run --python-allocators` records each object.');
    }
    // Hidden frames are said, not silently dropped.
    if (d.allocator_frames === false) {
      const hint = el('div', 'hint');
      hint.id = 'allocator-hint';
      hint.textContent = 'Allocator frames (malloc, operator new, the GPU runtimes and drivers, ' +
        "PyTorch's allocators) are hidden: a box is the code that asked for the memory; " +
        '`tracker flamegraph --keep-allocator-frames` draws them.';
      $('facts').after(hint);
    }
    if (sampled)
      warn.append(el('div', '', 'sampled at ' + T.count(sampled) + ' bytes: whole stacks for a ' +
        'Poisson sample of the allocations (one per ' + T.count(sampled) + ' bytes on average); ' +
        'the stacks\' figures are estimates scaled from it, the totals above are exact.'));
    if (caps.length > 1) {
      const list = el('div', 'hint');
      list.textContent = caps.map((c) => 'pid ' + c.pid + ': ' + T.commandLine(c.argv)).join(' · ');
      $('facts').after(list);
    }
  }

  function modeText() {
    const what = {
      peak: 'Live at the peak' + (caps.length > 1 ? ' of each process' : ''),
      // A capture with leak classes counts the kinds `tracker leaks` lists
      // (d.leak_kinds); without them, every block still allocated.
      leaks: caps.some((c) => c.leaks_at === 'script_end')
        ? 'Still allocated when the Python script ended (leaks)'
        : d.leak_kinds === 'definite,indirect'
          ? 'Lost at exit: definitely and indirectly lost, as tracker leaks lists them (--kinds all: every block still allocated)'
          : d.leak_kinds === 'all'
            ? 'Still allocated at exit, every leak kind (leaks)'
            : d.leak_kinds
              ? 'Leaked at exit, kinds ' + d.leak_kinds + ' (leaks)'
              : 'Still allocated at exit, still reachable included (leaks; tracker leaks classifies them)',
      temporary: 'Temporary allocations (freed right after being made)',
      allocated: 'Everything allocated',
    }[d.select] || d.select;
    const where = d.spaces === 'heap' ? (d.alt && !d.alt[0].frames ? ' · host memory' : '') : d.spaces === 'heap+mmap' ? ' · heap and anonymous mmap'
      : d.spaces === 'gpu' ? ' · GPU memory, every device' : ' · GPU memory of device ' + d.spaces.slice(4);
    let s = (m.temporal ? 'Heap over a time range' : what) + where;
    if (d.inverted) s += ' · inverted: allocating frames at the top';
    if (d.by_import) s += ' · under the Python imports open when allocated';
    // Python first: say what the stacks leave out and how to see it.
    if (caps.some((c) => c.python)) {
      s += d.frames === 'python'
        ? ' · Python frames only where Python ran (native code under a line counts as the line; ' +
          (d.alt && d.alt[0].frames ? 'Stacks: Python + native' : 'flamegraph --native') + ' shows it)'
        : d.frames === 'native' ? ' · Python and native frames (--native)'
        : d.frames === 'noimports' ? ' · Python frames only, the import machinery hidden (--hide-imports)'
        : ' · every frame, the interpreter\'s too';
    }
    $('mode').textContent = s;
  }

  function legend() {
    const box = $('legend');
    // The frame kinds (application .. GPU), and imports when drawn.
    const kinds = [0, 1, 2, 3, 4, 5].concat(d.by_import ? [T.K_IMPORT] : []);
    for (const k of kinds) {
      const span = el('span');
      const sw = el('i');
      sw.style.background = T.kindColor(k);
      span.append(sw, document.createTextNode(T.KINDS[k]));
      box.append(span);
    }
    const span = el('span');
    const sw = el('i');
    sw.style.background = T.MATCH_COLOR;
    span.append(sw, document.createTextNode('search match'));
    box.append(span);
    seriesLegend();
  }

  // The chart's legend: a button per line, a click hides or shows it.
  function seriesLegend() {
    const series = $('series');
    series.replaceChildren();
    for (const s of chart.series) {
      const b = el('button', 'ser');
      b.type = 'button';
      const sw2 = el('i');
      sw2.style.background = s.color;
      b.append(sw2, document.createTextNode(s.label));
      const on = !chart.hidden.has(s.label);
      b.setAttribute('aria-pressed', String(on));
      b.title = 'show or hide this line';
      b.addEventListener('click', () => b.setAttribute('aria-pressed', String(chart.toggle(s.label))));
      series.append(b);
    }
  }

  // Several processes: which lines the chart draws (each process's heap,
  // one process, or the labelled sum); and the scale.
  function chartControls() {
    const procs = d.timeline.procs || [];
    if (procs.length) {
      const sel = $('tl-proc');
      const opt = (value, text) => {
        const o = el('option', '', text);
        o.value = value;
        sel.append(o);
      };
      opt('each', 'heap of each process');
      procs.forEach((p, i) => opt(String(i), T.procName(p, caps)));
      opt('sum', 'sum of all processes');
      sel.value = chart.view;
      sel.addEventListener('change', () => {
        const v = sel.value;
        chart.setView(v === 'each' || v === 'sum' ? v : Number(v));
        seriesLegend();
      });
      $('tl-proc-box').hidden = false;
    }
    $('tl-scale').addEventListener('change', () => chart.setScale($('tl-scale').value));
  }

  function mergedNote() {
    const mg = d.merged;
    let s = '';
    if (mg.frames)
      s = T.count(mg.frames) + (mg.frames === 1 ? ' frame' : ' frames') + ' under ' + mg.threshold_pct +
        '% of the total merged into "other" boxes';
    if (mg.threshold_pct > mg.asked_pct)
      s += ' (the threshold was raised from ' + mg.asked_pct + '% to keep the page under ' +
        +(mg.budget / 1e6).toPrecision(3) + ' MB)';
    $('merged').textContent = s ? s + '.' : '';
    $('foot').textContent =
      d.tool + ' · everything on this page is embedded; it makes no network request · ' + T.count(m.n) + ' frames';
  }

  function threads() {
    if (!d.threads_on) return;
    $('thread-box').hidden = false;
    const sel = $('thread');
    sel.append(new Option('all threads', '-1'));
    d.threads.forEach((t, i) => {
      let label;
      if (t.others) label = t.others + ' other threads';
      else {
        label = 'thread ' + t.tid + (t.name ? ' (' + t.name + ')' : '');
        if (caps.length > 1) label = 'pid ' + t.pid + ' · ' + label;
      }
      sel.append(new Option(label, String(i)));
    });
    sel.addEventListener('change', () => {
      state.thread = +sel.value;
      recompute();
    });
  }

  // Host memory or a device's: the selector appears only when the page
  // carries device trees (a capture with GPU events, drawn without --gpu).
  function spaceBox() {
    const alts = m.raw.alt;
    if (!alts) return;
    // A Python page's other stacks (hybrid, no import machinery) beside
    // the Python-first ones.
    if (alts[0].frames) {
      $('frames-box').hidden = false;
      const sel = $('frames');
      sel.append(new Option('Python only', '0'));
      const names = { native: 'Python + native', noimports: 'Python, no import machinery' };
      alts.forEach((a, i) => sel.append(new Option(names[a.frames] || a.frames, String(i + 1))));
      sel.addEventListener('change', () => setSpace(+sel.value));
      return;
    }
    $('space-box').hidden = false;
    const sel = $('space');
    sel.append(new Option('Host memory', '0'));
    alts.forEach((a, i) =>
      sel.append(new Option(a.spaces === 'gpu' ? 'GPU memory' : 'GPU ' + a.spaces.slice(4), String(i + 1))));
    sel.addEventListener('change', () => setSpace(+sel.value));
  }

  function setSpace(i) {
    if (!spaces[i]) spaces[i] = T.decode(Object.assign({}, spaces[0].raw, spaces[0].raw.alt[i - 1]));
    m = spaces[i];
    d = m.raw;
    if (spaces[0].raw.alt[0].frames) $('frames').value = String(i);
    else $('space').value = String(i);
    flame.setModel(m);
    state.zoom = 0;
    // Device trees hold every thread's values: the host's thread list
    // does not apply to them.
    if (d.threads_on) {
      $('thread').disabled = i > 0;
      if (i > 0) {
        state.thread = -1;
        $('thread').value = '-1';
      }
    }
    modeText();
    mergedNote();
    recompute();
  }

  // ---- Flamegraph ---------------------------------------------------------------

  const flame = new T.Flame($('flame-canvas'), $('flame-over'), m);
  let vals = null;

  function recompute() {
    const range = state.range ? { s: state.range.s, e: state.range.e, mode: state.tmode } : null;
    vals = T.values(m, { thread: state.thread, range });
    flame.setValues(vals, state.metric);
    if (flame.tot[state.zoom] <= 0) state.zoom = 0;
    updateMatch();
    render();
    if (m.temporal) rangeInfo();
  }

  function render() {
    flame.zoom = state.zoom;
    flame.match = state.match;
    flame.layout();
    flame.draw();
    $('empty').hidden = flame.tot[0] > 0;
    crumbs();
  }

  function crumbs() {
    const nav = $('crumbs');
    nav.replaceChildren();
    const path = [];
    for (let i = state.zoom; i >= 0; i = m.parent[i]) path.unshift(i);
    path.forEach((node, k) => {
      if (k) nav.append(el('span', '', '›'));
      const b = el('button', '', node === 0 ? 'all' : m.fnOf(node));
      b.type = 'button';
      b.addEventListener('click', () => zoomTo(node));
      nav.append(b);
    });
  }

  function zoomTo(node) {
    state.zoom = node;
    updateMatch();
    render();
  }

  function matchText(node) {
    return (m.fnOf(node) + '\n' + m.fileOf(node) + '\n' + m.modOf(node)).toLowerCase();
  }

  // Search: every node whose function, file or module holds the text;
  // the matched share counts each matched subtree once.
  function updateMatch() {
    const q = state.query.trim().toLowerCase();
    if (!q) {
      state.match = null;
      state.matchInfo = null;
      $('match').textContent = '';
      return;
    }
    const match = new Uint8Array(m.n);
    let frames = 0;
    for (let i = 1; i < m.n; i++)
      if (m.kindOf(i) !== T.K_OTHER && matchText(i).includes(q)) {
        match[i] = 1;
        frames++;
      }
    let sum = 0;
    const stack = [state.zoom];
    while (stack.length) {
      const node = stack.pop();
      if (match[node]) {
        sum += flame.tot[node];
        continue;
      }
      for (let k = m.childStart[node]; k < m.childStart[node + 1]; k++) stack.push(m.childList[k]);
    }
    const whole = flame.tot[state.zoom];
    state.match = match;
    state.matchInfo = { frames, value: sum, whole, share: whole ? sum / whole : 0 };
    const unit = state.metric === 'count' ? T.count(sum) + ' allocations' : T.bytes(sum);
    $('match').textContent = frames
      ? frames + ' matching frames · ' + unit + ' = ' + T.percent(sum, whole) + ' of the view'
      : 'no match';
  }

  function tooltip(e, rect) {
    const tip = $('tip');
    if (rect < 0) {
      tip.hidden = true;
      return;
    }
    const node = flame.rn[rect];
    tip.replaceChildren();
    const kind = m.kindOf(node);
    tip.append(el('div', 'fn', node === 0 ? 'all' : kind === T.K_OTHER ? 'other' : m.fnOf(node)));
    if (kind === T.K_OTHER)
      tip.append(el('div', 'src', m.merged[node] + ' frames, each under ' + d.merged.threshold_pct +
        '% of the total, merged here'));
    const file = m.fileOf(node);
    if (file) tip.append(el('div', 'src', file + (m.lineOf(node) ? ':' + m.lineOf(node) : '')));
    if (m.modOf(node)) tip.append(el('div', 'src', m.modOf(node)));
    const row = (k, v) => {
      const r = el('div', 'row');
      r.append(el('span', '', k), el('span', '', v));
      tip.append(r);
    };
    if (node !== 0) row('kind', T.KINDS[kind]);
    row('total', T.bytes(vals.totB[node]) + ' (' + T.percent(vals.totB[node], vals.totB[0]) + ' of all)');
    row('own', T.bytes(vals.selfB[node]));
    if (node !== 0) {
      const p = m.parent[node];
      row('share of caller', T.percent(vals.totB[node], vals.totB[p]));
    }
    const own = vals.selfC[node] ? ' (' + T.count(vals.selfC[node]) + ' own)' : '';
    row('allocations', T.count(vals.totC[node]) + own);
    tip.hidden = false;
    const w = tip.offsetWidth;
    const h = tip.offsetHeight;
    const x = e.clientX + 14 + w > window.innerWidth ? e.clientX - 14 - w : e.clientX + 14;
    const y = e.clientY + 16 + h > window.innerHeight ? e.clientY - 12 - h : e.clientY + 16;
    tip.style.left = Math.max(0, x) + 'px';
    tip.style.top = Math.max(0, y) + 'px';
  }

  function canvasPos(e) {
    const r = flame.canvas.getBoundingClientRect();
    return [e.clientX - r.left, e.clientY - r.top];
  }

  function wire() {
    const cv = flame.canvas;
    cv.addEventListener('mousemove', (e) => {
      const rect = flame.hit(...canvasPos(e));
      if (rect !== flame.hoverRect) flame.setHover(rect);
      cv.style.cursor = rect >= 0 ? 'pointer' : 'default';
      tooltip(e, rect);
    });
    cv.addEventListener('mouseleave', () => {
      flame.setHover(-1);
      $('tip').hidden = true;
    });
    cv.addEventListener('click', (e) => {
      const rect = flame.hit(...canvasPos(e));
      if (rect >= 0) zoomTo(flame.rn[rect]);
    });
    document.addEventListener('keydown', (e) => {
      if (e.key === 'Escape') {
        if (document.activeElement === $('search') && state.query) return;
        zoomTo(0);
      }
    });
    $('reset').addEventListener('click', () => zoomTo(0));
    $('metric').addEventListener('change', () => {
      state.metric = $('metric').value;
      recompute();
    });
    const orient = (flameUp) => {
      flame.flame = flameUp;
      $('icicle').classList.toggle('on', !flameUp);
      $('flame').classList.toggle('on', flameUp);
      render();
    };
    $('icicle').addEventListener('click', () => orient(false));
    $('flame').addEventListener('click', () => orient(true));
    let timer = 0;
    $('search').addEventListener('input', () => {
      clearTimeout(timer);
      timer = setTimeout(() => {
        state.query = $('search').value;
        updateMatch();
        render();
      }, 120);
    });
    let resizeTimer = 0;
    window.addEventListener('resize', () => {
      clearTimeout(resizeTimer);
      resizeTimer = setTimeout(() => {
        render();
        chart.draw();
      }, 100);
    });
  }

  // ---- Timeline and temporal ranges ------------------------------------------------

  const end = Math.max(...caps.map((c) => c.duration_s * 1e9));
  const chart = new T.Timeline($('timeline'), $('chart-tip'), d.timeline, end, m.temporal, (r) => {
    state.range = r;
    $('brush-clear').hidden = false;
    recompute();
  }, caps);

  function rangeInfo() {
    const tm = m.temporal;
    const r = state.range;
    const t0 = T.duration(r.s * tm.bucketNs);
    const t1 = T.duration(Math.min((r.e + 1) * tm.bucketNs, chart.end));
    let s = 'range ' + t0 + ' – ' + t1;
    if (state.tmode === 'peak') {
      const k = T.highBucket(tm, r.s, r.e);
      chart.high = k;
      s += ' · highest heap ' + T.bytes(tm.high[k]) + ' at ' + T.duration(tm.highT[k]);
    } else {
      chart.high = -1;
    }
    $('brush-info').textContent = s;
    chart.draw();
  }

  function temporal() {
    if (!m.temporal) return;
    $('tmode-box').hidden = false;
    $('tmode').value = state.tmode;
    $('tmode').addEventListener('change', () => {
      state.tmode = $('tmode').value;
      recompute();
    });
    $('brush-clear').addEventListener('click', () => {
      state.range = { s: 0, e: m.temporal.nb - 1 };
      chart.setRange(null);
      $('brush-clear').hidden = true;
      recompute();
    });
  }

  // ---- Test hook -----------------------------------------------------------------

  window.trkTest = {
    ready: false,
    visibleFrames: () => flame.frames(),
    canvasRect: () => flame.canvas.getBoundingClientRect().toJSON(),
    state: () => ({
      zoom: state.zoom === 0 ? 'all' : m.fnOf(state.zoom),
      crumbs: Array.from($('crumbs').querySelectorAll('button'), (b) => b.textContent),
      query: state.query,
      search: state.matchInfo,
      thread: state.thread,
      range: state.range,
      high: chart.high,
      orientation: flame.flame ? 'flame' : 'icicle',
      total: flame.tot[0],
      space: d.spaces,
    }),
    // The spaces the selector offers ("heap", "gpu", "gpu N"); [] without it.
    spaces: () => (spaces[0].raw.alt ? [spaces[0].raw.spaces, ...spaces[0].raw.alt.map((a) => a.spaces)] : []),
    stats: () => Object.assign({}, flame.stats),
    redraw: () => {
      const t0 = performance.now();
      render();
      return performance.now() - t0;
    },
    // Client coordinates of a time (ns after the start) on the chart.
    chartPoint: (t) => {
      const r = chart.c.getBoundingClientRect();
      return { x: r.left + chart.xOf(t), y: r.top + r.height / 2 };
    },
    temporal: () => (m.temporal ? { buckets: m.temporal.nb, bucketNs: m.temporal.bucketNs } : null),
    // The chart: its view, scale, lines (shown or not, highest value), the
    // scale's top and the marked peak.
    timeline: () => ({
      view: chart.view,
      scale: chart.scale,
      series: chart.series.map((s) => ({ label: s.label, shown: !chart.hidden.has(s.label), max: Math.max(0, ...s.values) })),
      max: chart.max,
      marker: chart.marker(),
    }),
    // Height of bytes v on the chart, 0 (bottom) .. 1 (top).
    chartFrac: (v) => chart.fracOf(v),
  };

  header();
  modeText();
  legend();
  chartControls();
  mergedNote();
  spaceBox();
  threads();
  temporal();
  wire();
  chart.draw();
  performance.mark('trk:chart');
  recompute();
  performance.mark('trk:ready');
  window.trkTest.ready = true;
})();
