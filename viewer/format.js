// SPDX-License-Identifier: MIT
//
// format.js - number, byte, time and command-line formatting shared by the
// page's parts. Must not: touch the DOM.
(function () {
  'use strict';
  const T = (window.Trk = window.Trk || {});

  const UNITS = ['B', 'KiB', 'MiB', 'GiB', 'TiB', 'PiB'];

  // "1.5 MiB"; exact bytes below 1 KiB.
  T.bytes = function (v) {
    let u = 0;
    while (v >= 1024 && u < UNITS.length - 1) {
      v /= 1024;
      u++;
    }
    return u === 0 ? v + ' B' : v.toFixed(v < 10 ? 2 : v < 100 ? 1 : 0) + ' ' + UNITS[u];
  };

  // "1,234,567"
  T.count = function (v) {
    return Math.round(v).toLocaleString('en-US');
  };

  T.percent = function (part, whole) {
    if (!whole) return '0%';
    const p = (100 * part) / whole;
    return (p >= 10 ? p.toFixed(1) : p >= 0.1 ? p.toFixed(2) : p.toPrecision(2)) + '%';
  };

  // Nanoseconds to "12.3 ms" / "4.56 s".
  T.duration = function (ns) {
    const s = ns / 1e9;
    if (s >= 100) return s.toFixed(0) + ' s';
    if (s >= 1) return s.toFixed(2) + ' s';
    if (s >= 1e-3) return (s * 1e3).toFixed(s >= 0.1 ? 0 : 1) + ' ms';
    return (s * 1e6).toFixed(0) + ' µs';
  };

  // argv as a shell would need it typed: plain words bare, others quoted.
  T.commandLine = function (argv) {
    return argv
      .map((a) => (/^[\w@%+=:,./-]+$/.test(a) ? a : "'" + a.replace(/'/g, "'\\''") + "'"))
      .join(' ');
  };

  T.basename = function (p) {
    const i = p.lastIndexOf('/');
    return i < 0 ? p : p.slice(i + 1);
  };

  // A file's shortest identifying path (src/analysis/frames.c,
  // trk_display_path): below site-packages/dist-packages or the standard
  // library's lib/pythonX.Y/, else the basename, with its directory when the
  // basename names no file by itself (__init__.py, __main__.py).
  T.shortPath = function (p) {
    let best = -1;
    for (const root of ['/site-packages/', '/dist-packages/']) {
      const i = p.lastIndexOf(root);
      if (i >= 0 && i + root.length < p.length) best = Math.max(best, i + root.length);
    }
    if (best >= 0) return p.slice(best);
    const lib = p.indexOf('/lib/python');
    if (lib >= 0) {
      const slash = p.indexOf('/', lib + 11);
      if (slash >= 0 && slash + 1 < p.length) return p.slice(slash + 1);
    }
    const b = p.lastIndexOf('/');
    const base = p.slice(b + 1);
    if (b > 0 && base.startsWith('__') && base.endsWith('__.py')) {
      return p.slice(p.lastIndexOf('/', b - 1) + 1);
    }
    return base;
  };
})();
