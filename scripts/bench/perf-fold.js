#!/usr/bin/env node
'use strict';
// Where a process's on-CPU samples go, from a `perf record -e cpu-clock -g` file of a Node process
// started with --perf-basic-prof (scripts/bench/worker-perf.js writes them):
//   - by owner: the library of the innermost JavaScript frame of each sample (the code that asked
//     for the work, native and kernel time included), GC and the JIT compiler apart;
//   - inclusive: the share of samples with a given function anywhere on the stack.
//
//   node scripts/bench/perf-fold.js <perf.data> [--rounds N] [--fn name]... [--top 40]
const { spawnSync } = require('node:child_process');

const argv = process.argv.slice(2);
const file = argv[0];
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const ROUNDS = Number(opt('rounds', 1));
const TOP = Number(opt('top', 40));
const FNS = argv.flatMap((a, i) => (a === '--fn' ? [argv[i + 1]] : []));
const DEFAULT_FNS = [
  'streamChat /',
  'makeRequest /',
  'buildBody /',
  'fetch node:internal/deps/undici',
  'readableByteStreamControllerEnqueue',
  'commit /',
  'oneStatementCommit',
  'announce /',
  'LOG /',
  'request /work/wt-wcpu/libs/messaging',
  'publish /work/wt-wcpu/libs/messaging',
  '_zod.parse',
  'pg-protocol/dist/parser.js',
  '_handleDataRow',
  'PostgresQueryRunner.js',
  'runBatch',
  'projection',
  'JsonStringify',
  'JsonParse',
  'prom-client',
  'Heap::CollectGarbage',
  'Scavenge',
  'OptimizingCompileDispatcher',
  'Runtime_CompileLazy',
  'Deoptimizer',
  'do_syscall_64',
  'uv__io_poll',
  'epoll_wait',
];

const r = spawnSync('perf', ['script', '-i', file, '-F', 'tid,period,ip,sym'], {
  encoding: 'utf8',
  maxBuffer: 1 << 30,
});
/** @type {Array<{ tid: number, period: number, frames: string[] }>} */
const samples = [];
/** @type {{ tid: number, period: number, frames: string[] } | null} */
let cur = null;
for (const line of r.stdout.split('\n')) {
  if (!line.startsWith('\t') && !line.startsWith(' ') && line.trim()) {
    const m = line.trim().match(/^(\d+)\s+(\d+)/);
    cur = { tid: Number(m?.[1] ?? 0), period: Number(m?.[2] ?? 0), frames: [] };
    samples.push(cur);
  } else if (line.trim() && cur) {
    const f = line.trim().replace(/^[0-9a-f]+\s+/, '');
    cur.frames.push(f);
  }
}
const mainTid = (() => {
  const byTid = new Map();
  for (const s of samples) byTid.set(s.tid, (byTid.get(s.tid) ?? 0) + s.period);
  return [...byTid.entries()].sort((a, b) => b[1] - a[1])[0]?.[0];
})();

function owner(s) {
  const fr = s.frames;
  const any = (re) => fr.some((f) => re.test(f));
  if (s.tid !== mainTid) {
    if (any(/OptimizingCompile|Compiler|compiler/)) return 'bg: JIT compile';
    if (any(/Scaveng|Marking|Sweep|Heap|Concurrent|Evacuat/)) return 'bg: GC';
    return 'bg: other';
  }
  if (any(/Heap::CollectGarbage|ScavengerCollector|MarkCompactCollector|Heap::PerformGarbageCollection/))
    return 'GC (main thread)';
  if (
    any(
      /Runtime_CompileLazy|Compiler::Compile|Deoptimizer|Runtime_CompileOptimized|Runtime_InstallBaselineCode|BaselineBatchCompiler/,
    )
  )
    return 'JIT (main thread: parse, compile, deopt)';
  for (const f of fr) {
    if (!/JS:[*^~+]?/.test(f)) continue;
    const m = f.match(/JS:[*^~+]?\S*\s+(\S+?):\d+:\d+$/) ?? f.match(/JS:[*^~+]?(\S*)$/);
    const where = m?.[1] ?? f;
    return classify(where);
  }
  if (any(/uv__io_poll|epoll/)) return 'event loop (no JS)';
  return 'native (no JS frame)';
}

function classify(where) {
  let m;
  if ((m = where.match(/node_modules\/(@[^/]+\/[^/]+|[^/]+)/))) return `npm ${m[1]}`;
  if ((m = where.match(/\/work\/[^/]+\/(apps|libs)\/([^/]+)\/dist\/(.*)\.js/))) return `${m[1]}/${m[2]}/${m[3]}`;
  if (where.startsWith('node:internal/deps/undici')) return 'node undici';
  if ((m = where.match(/^node:(internal\/)?([a-z_]+)/))) return `node ${m[2]}`;
  if (where === '' || where.startsWith(':')) return 'eval (new Function)';
  return where;
}

const total = samples.reduce((a, s) => a + s.period, 0);
const ms = (p) => p / 1e6 / ROUNDS;
const byOwner = new Map();
for (const s of samples) {
  const o = owner(s);
  byOwner.set(o, (byOwner.get(o) ?? 0) + s.period);
}
console.log(`${file}: ${(total / 1e6).toFixed(0)} ms on CPU, ${ROUNDS} rounds: ${ms(total).toFixed(2)} ms/round`);
console.log('-- by owner (innermost JS frame):');
for (const [o, p] of [...byOwner.entries()].sort((a, b) => b[1] - a[1]).slice(0, TOP))
  console.log(`${((100 * p) / total).toFixed(1).padStart(5)} %  ${ms(p).toFixed(3)} ms  ${o}`);
// The owners grouped into what a round does (first matching rule wins).
/** @type {Array<[string, RegExp]>} */
const GROUPS = [
  ['JIT compiler (background threads)', /^bg: JIT/],
  ['GC (main thread and helpers)', /^GC|^bg: GC/],
  [
    'LLM call: openai SDK, HTTP client, SSE',
    /npm openai|node undici|node webstreams|node _http|libs\/llm\/|node encoding|wasm-function/,
  ],
  ['Postgres client: pg, pool, TypeORM, row codec', /npm pg|npm postgres-|npm typeorm|libs\/persistence|store\//],
  ['NATS: nats.js, Bus, zod', /npm nats|libs\/messaging|npm zod|eval \(new Function\)|^JS:\S? :\d/],
  ['logging: pino', /npm pino|npm @pinojs|service-kit\/logger/],
  ['agent loop and worker code', /libs\/agent-loop|apps\/session-worker|libs\/contracts|service-kit/],
  ['Node streams and sockets (writes, reads)', /node streams|node stream_base_commons|node net|node buffer/],
  [
    'Node async machinery: ticks, promise hooks, timers, events',
    /node process|node async_hooks|node timers|node events|node event_target|node internal|node util|node abort_controller|node priority_queue|node per_context|node perf/,
  ],
  ['event loop, native, kernel without JS', /event loop|native/],
];
const grouped = new Map();
for (const [o, p] of byOwner) {
  const g = GROUPS.find(([, re]) => re.test(o))?.[0] ?? 'other';
  grouped.set(g, (grouped.get(g) ?? 0) + p);
}
console.log('-- grouped:');
for (const [g, p] of [...grouped.entries()].sort((a, b) => b[1] - a[1]))
  console.log(`${((100 * p) / total).toFixed(1).padStart(5)} %  ${ms(p).toFixed(3)} ms  ${g}`);
console.log('-- inclusive (any frame matching):');
for (const fn of FNS.length ? FNS : DEFAULT_FNS) {
  let p = 0;
  for (const s of samples) if (s.frames.some((f) => f.includes(fn))) p += s.period;
  console.log(`${((100 * p) / total).toFixed(1).padStart(5)} %  ${ms(p).toFixed(3)} ms  ${fn}`);
}
