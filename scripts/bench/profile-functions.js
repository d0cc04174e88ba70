'use strict';
// Where a .cpuprofile's time went, by function: self time (top N) and, for functions whose name
// matches --inclusive, the time spent in them and everything they called (each sample counted once
// per matching function, however deep the recursion).
//
//   node scripts/bench/profile-functions.js <file.cpuprofile> [--last 0.5] [--top 30] [--inclusive 'check|parse']
//
// --last keeps the samples of the profile's last fraction of wall time (the bench's load, not the
// app's start-up). Shares are of the busy (non-idle) time in that window.
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const file = argv[0];
if (!file || file.startsWith('--')) {
  console.error('usage: profile-functions.js <file.cpuprofile> [--last 0.5] [--top 30] [--inclusive REGEX]');
  process.exit(2);
}
const last = Number(opt('last', '1'));
const top = Number(opt('top', '30'));
const inclusive = opt('inclusive', null);
// --window <fromUs>,<toUs>: only the samples between two CLOCK_MONOTONIC times in µs (what
// `process.hrtime.bigint() / 1000n` reads in any process of the machine; V8 stamps samples with it).
const windowUs = opt('window', null)?.split(',').map(Number) ?? null;

const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
const byId = new Map(prof.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of prof.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const label = (n) => {
  const cf = n.callFrame;
  const where = cf.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '');
  return `${cf.functionName || '(anonymous)'} ${where}:${cf.lineNumber + 1}`;
};

// time per sampled node, within the window
const end = prof.endTime;
const from = windowUs ? windowUs[0] : end - (end - prof.startTime) * last;
const to = windowUs ? windowUs[1] : Infinity;
const perNode = new Map();
let at = prof.startTime;
for (let i = 0; i < prof.samples.length; i++) {
  at += prof.timeDeltas[i] ?? 0;
  if (at < from || at > to) continue;
  perNode.set(prof.samples[i], (perNode.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
}

const self = new Map();
const incl = new Map();
const re = inclusive ? new RegExp(inclusive) : null;
let busy = 0;
for (const [id, us] of perNode) {
  const node = byId.get(id);
  if (node.callFrame.functionName === '(idle)') continue;
  busy += us;
  const key = label(node);
  self.set(key, (self.get(key) ?? 0) + us);
  if (!re) continue;
  // every matching function on the stack, once
  const seen = new Set();
  for (let n = node, depth = 0; n && depth < 10_000; n = byId.get(parent.get(n.id)), depth++) {
    const k = label(n);
    if (!seen.has(k) && re.test(n.callFrame.functionName)) {
      seen.add(k);
      incl.set(k, (incl.get(k) ?? 0) + us);
    }
  }
}

const pct = (us) => `${((100 * us) / busy).toFixed(1).padStart(5)} %  ${(us / 1000).toFixed(0).padStart(6)} ms`;
console.log(
  windowUs
    ? `busy ${(busy / 1000).toFixed(0)} ms of ${((windowUs[1] - windowUs[0]) / 1000).toFixed(0)} ms (window)`
    : `busy ${(busy / 1000).toFixed(0)} ms in the last ${(last * 100).toFixed(0)} % of ${((end - prof.startTime) / 1e6).toFixed(1)} s`,
);
console.log('\nself time:');
for (const [k, us] of [...self].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`);
if (re) {
  console.log(`\ninclusive time of functions matching /${inclusive}/:`);
  for (const [k, us] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(us)}  ${k}`);
}
