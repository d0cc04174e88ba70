'use strict';
// Preload (`node -r scripts/bench/gc-log.js app.js`) that appends one JSON line per garbage collection
// to $SKALD_GC_LOG: its end on CLOCK_MONOTONIC in µs (as .cpuprofile samples and
// `process.hrtime.bigint() / 1000n` in any process), its kind and its duration, so that a benchmark
// can sum a process's collections by phase (sim-round-cpu.js).
const fs = require('node:fs');
const { PerformanceObserver, constants } = require('node:perf_hooks');

const KINDS = {
  [constants.NODE_PERFORMANCE_GC_MINOR]: 'minor',
  [constants.NODE_PERFORMANCE_GC_MAJOR]: 'major',
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL]: 'incremental',
  [constants.NODE_PERFORMANCE_GC_WEAKCB]: 'weakcb',
};
const file = process.env.SKALD_GC_LOG;
if (file) {
  const fd = fs.openSync(file, 'a');
  new PerformanceObserver((list) => {
    const now = Number(process.hrtime.bigint() / 1000n);
    const lines = list.getEntries().map((e) => {
      // A gc entry's detail (Node's NodeGCPerformanceDetail) names the collection's kind.
      const kind = /** @type {{ detail?: { kind?: number } }} */ (e).detail?.kind;
      return JSON.stringify({ at: now, kind: KINDS[kind ?? -1] ?? String(kind), ms: e.duration });
    });
    fs.writeSync(fd, lines.join('\n') + '\n');
  }).observe({ entryTypes: ['gc'] });
}
