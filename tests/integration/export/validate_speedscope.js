// SPDX-License-Identifier: MIT
//
// validate_speedscope.js - checks speedscope files against the file format
// schema that the speedscope npm package ships (the same JSON schema as
// https://www.speedscope.app/file-format-schema.json), with ajv, plus the
// rules speedscope's importer relies on that a schema cannot state (one
// weight per sample, frame indices in range). Used by test_export.py, which
// installs both packages into a cache directory first; nothing from npm is
// kept in the repository.
//
// usage: node validate_speedscope.js NODE_MODULES_DIR FILE...
// Prints "ok FILE" per valid file; exits 1 with the errors otherwise.
'use strict';

const fs = require('fs');
const path = require('path');

const nm = process.argv[2];
const Ajv = require(path.join(nm, 'ajv'));
const schema = require(path.join(nm, 'speedscope', 'dist', 'release', 'file-format-schema.json'));

const ajv = new Ajv({allErrors: true, strict: false});
const validate = ajv.compile(schema);

let failed = false;
for (const file of process.argv.slice(3)) {
  const errors = [];
  let doc;
  try {
    doc = JSON.parse(fs.readFileSync(file, 'utf8'));
  } catch (e) {
    errors.push('not JSON: ' + e.message);
  }
  if (doc !== undefined) {
    if (!validate(doc))
      for (const e of validate.errors) errors.push(`${e.instancePath || '/'} ${e.message}`);
    const nframes = doc.shared && Array.isArray(doc.shared.frames) ? doc.shared.frames.length : 0;
    (doc.profiles || []).forEach((p, i) => {
      if (p.type !== 'sampled') return;
      if (p.samples.length !== p.weights.length)
        errors.push(`profiles[${i}]: ${p.samples.length} samples but ${p.weights.length} weights`);
      p.samples.forEach((s, k) => {
        for (const f of s)
          if (!Number.isInteger(f) || f < 0 || f >= nframes)
            errors.push(`profiles[${i}].samples[${k}]: frame ${f} out of range`);
      });
      let sum = 0;
      for (const w of p.weights) {
        if (!(w >= 0)) errors.push(`profiles[${i}]: negative weight ${w}`);
        sum += w;
      }
      if (p.endValue - p.startValue !== sum)
        errors.push(`profiles[${i}]: endValue - startValue = ${p.endValue - p.startValue}, weights sum to ${sum}`);
    });
    if (doc.activeProfileIndex !== undefined &&
        !(doc.activeProfileIndex >= 0 && doc.activeProfileIndex < (doc.profiles || []).length))
      errors.push('activeProfileIndex out of range');
  }
  if (errors.length) {
    failed = true;
    console.log(`FAIL ${file}:\n  ` + errors.join('\n  '));
  } else {
    console.log(`ok ${file}`);
  }
}
process.exit(failed ? 1 : 0);
