#!/usr/bin/env node
'use strict';
// On-CPU attribution of the session worker per tool round. The V8 CPU profiles of `turn.js
// --profile` sample by wall clock: a thread preempted inside a system call (a socket write that
// wakes Postgres on the other core) is counted as that call's self time. `perf record -e cpu-clock`
// samples only while the worker is on a CPU, on every thread, kernel included; with the worker
// started with `--perf-basic-prof` its JIT frames have names.
//
//   node scripts/bench/worker-perf.js [--turns 30] [--load 50] [--out test-results/bench/perf]
//                                     [--interpreted-frames] [--trace-jit] [--warm-turns 30]
//
// Two phases: `--turns` fresh conversations one at a time (the turn bench's 5 read_file rounds at
// 0 ms), then `--load` conversations at once (3 rounds at 200 ms, the bench's throughput phase).
// For each: CPU ms per round by thread (from /proc/<pid>/task/*/stat) and perf's top symbols (self)
// and top inclusive frames in ms per round. Writes <out>/<phase>.perf.data and <out>/summary.txt.
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const path = require('node:path');
const bench = require('./turn');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const TURNS = Number(opt('turns', 30));
const LOAD = Number(opt('load', 50));
const OUT = path.resolve(__dirname, '../..', opt('out', 'test-results/bench/perf'));
const INTERPRETED = argv.includes('--interpreted-frames');
const TRACE_JIT = argv.includes('--trace-jit');
const SEQ_PHASES = Number(opt('seq-phases', 1));
const TICK_MS = 10;
const FREQ = 997; // samples per second per CPU: ~1 ms a sample

/** CPU ms by thread name (utime + stime) of a process. */
function threadCpu(pid) {
  const out = {};
  for (const tid of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const stat = fs.readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      const comm = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = (Number(f[11]) + Number(f[12])) * TICK_MS;
      const name = tid === String(pid) ? 'main' : comm.replace(/\d+$/, '#');
      out[name] = (out[name] ?? 0) + ms;
    } catch {
      /* thread gone */
    }
  }
  return out;
}

function diff(a, b) {
  const out = {};
  for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) out[k] = (b[k] ?? 0) - (a[k] ?? 0);
  return out;
}

function startPerf(pid, file) {
  const child = spawn('perf', ['record', '-e', 'cpu-clock', '-F', String(FREQ), '-g', '-p', String(pid), '-o', file], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  let err = '';
  child.stderr.on('data', (d) => (err += d));
  const exited = new Promise((r) => child.once('exit', () => r(err)));
  return { stop: () => (child.kill('SIGINT'), exited) };
}

/** perf report rows: [percent, symbol] (self or children). */
function report(file, children, extra = []) {
  const r = spawnSync(
    'perf',
    [
      'report',
      '-i',
      file,
      '--stdio',
      '--no-demangle',
      children ? '--children' : '--no-children',
      '-g',
      'none',
      '--percent-limit',
      '0.4',
      ...extra,
    ],
    { encoding: 'utf8', maxBuffer: 256 << 20 },
  );
  /** @type {Array<[number, string]>} */
  const rows = [];
  for (const line of r.stdout.split('\n')) {
    if (line.startsWith('#') || !line.trim()) continue;
    const m = line.match(/^\s*([\d.]+)%\s+(?:([\d.]+)%\s+)?(.*)$/);
    if (m) rows.push([Number(m[1]), m[3].trim()]);
  }
  return rows;
}

/** On-CPU ms in a recording (cpu-clock's event count is in nanoseconds). */
function recordedMs(file) {
  const r = spawnSync('perf', ['report', '-i', file, '--stdio', '--no-children', '--sort', 'pid', '-g', 'none'], {
    encoding: 'utf8',
  });
  const m = r.stdout.match(/# Event count \(approx\.\): (\d+)/);
  return m ? Number(m[1]) / 1e6 : 0;
}

/** V8's optimisation trace lines of one phase (with --trace-jit), by kind and by function. */
function jitSummary(logs) {
  const kinds = {};
  const fns = {};
  for (const l of logs) {
    const k = l.match(/^\[(completed compiling|bailout|marking|compiling method|completed optimizing)/)?.[1];
    if (!k) continue;
    kinds[k] = (kinds[k] ?? 0) + 1;
    if (k === 'completed compiling' || k === 'bailout') {
      const f = l.match(/<JSFunction ([^ >]*)/)?.[1] ?? '?';
      const key = `${k}: ${f}`;
      fns[key] = (fns[key] ?? 0) + 1;
    }
  }
  return { kinds, fns: Object.entries(fns).sort((a, b) => b[1] - a[1]) };
}

async function phase(name, pid, rounds, proc, lines) {
  const logFrom = proc.logs.length;
  const file = path.join(OUT, `${name}.perf.data`);
  const perf = startPerf(pid, file);
  await new Promise((r) => setTimeout(r, 1000));
  const t0 = threadCpu(pid);
  const doneRounds = await rounds();
  const t1 = threadCpu(pid);
  await perf.stop();
  if (TRACE_JIT) {
    const phaseLogs = proc.logs.slice(logFrom);
    fs.writeFileSync(path.join(OUT, `${name}.jit.txt`), phaseLogs.filter((l) => l.startsWith('[')).join('\n') + '\n');
    const j = jitSummary(phaseLogs);
    lines.push(`jit (${name}): ${JSON.stringify(j.kinds)}`, ...j.fns.slice(0, 40).map(([f, n]) => `  ${n}  ${f}`));
  }
  const byThread = diff(t0, t1);
  const total = Object.values(byThread).reduce((a, b) => a + b, 0);
  const recorded = recordedMs(file);
  lines.push(
    '',
    `== ${name}: ${doneRounds} rounds; worker CPU ${(total / doneRounds).toFixed(2)} ms/round (/proc); ` +
      `perf ${(recorded / doneRounds).toFixed(2)} ms/round`,
    `threads (ms/round): ${Object.entries(byThread)
      .filter(([, v]) => v > 0)
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${(v / doneRounds).toFixed(2)}`)
      .join(', ')}`,
  );
  const perRound = (pct) => ((pct / 100) * recorded) / doneRounds;
  lines.push('-- by thread (self):');
  for (const [pct, t] of report(file, false, ['--sort', 'pid']))
    lines.push(`${pct.toFixed(1).padStart(5)} %  ${perRound(pct).toFixed(3)} ms  ${t}`);
  lines.push('-- by dso (self):');
  for (const [pct, sym] of report(file, false, ['--sort', 'dso']).slice(0, 12))
    lines.push(`${pct.toFixed(1).padStart(5)} %  ${perRound(pct).toFixed(3)} ms  ${sym}`);
  lines.push('-- top symbols (self):');
  for (const [pct, sym] of report(file, false, ['--sort', 'sym']).slice(0, 60))
    lines.push(`${pct.toFixed(1).padStart(5)} %  ${perRound(pct).toFixed(3)} ms  ${sym}`);
  lines.push('-- top frames (inclusive):');
  for (const [pct, sym] of report(file, true, ['--sort', 'sym']).slice(0, 120))
    lines.push(`${pct.toFixed(1).padStart(5)} %  ${perRound(pct).toFixed(3)} ms  ${sym}`);
}

async function main() {
  fs.mkdirSync(OUT, { recursive: true });
  const infra = await bench.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  const lines = [`worker-perf at ${new Date().toISOString()}`];
  try {
    const workerArgs = [
      '--perf-basic-prof',
      '--logfile=/dev/null',
      ...(INTERPRETED ? ['--interpreted-frames-native-stack'] : []),
      ...(TRACE_JIT ? ['--trace-opt', '--trace-deopt'] : []),
    ];
    stack = await bench.startStack(infra, { 'session-worker': workerArgs });
    const { LlmSimAdminClient } = require(path.resolve(__dirname, '../../libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await bench.makeUsers(stack, bench.CFG.users);
    const worker = stack.processes.find((p) => p.name === 'session-worker');
    const pid = worker.child.pid;
    // turn.js's warm-up (`--warm-turns N`, read by turn.js's CFG from this command line).
    await bench.warmUp(stack, users, sim);
    // Fresh conversations, one at a time.
    for (let p = 1; p <= SEQ_PHASES; p++) {
      const markers = bench.newMarkers(TURNS, 'perf');
      const ids = await bench.scriptConversations(sim, markers, 1, bench.CFG.perRound);
      const convs = await bench.openConversations(stack, users, markers);
      await phase(
        SEQ_PHASES > 1 ? `sequential${p}` : 'sequential',
        pid,
        async () => {
          let done = 0;
          for (const c of convs) if ((await c.turn()).how === 'done') done++;
          return done * bench.PER_ROUND_ROUNDS;
        },
        worker,
        lines,
      );
      for (const c of convs) c.close();
      await bench.unscript(sim, ids);
    }
    await phase(
      `load${LOAD}`,
      pid,
      async () => {
        const r = await bench.skaldLoad(stack, users, sim, LOAD);
        lines.push(`(load: ${r.turnsPerSec.toFixed(1)} turns/s of ${r.ideal}; errors ${r.errors})`);
        return Math.round(r.turnsPerSec * r.seconds) * (bench.CFG.load.toolRounds + 1);
      },
      worker,
      lines,
    );
  } finally {
    await stack?.stop();
    await infra.admin.end().catch(() => undefined);
    await infra.pg.destroy().catch(() => undefined);
    await infra.redis.destroy().catch(() => undefined);
  }
  fs.writeFileSync(path.join(OUT, 'summary.txt'), lines.join('\n') + '\n');
  console.log(lines.join('\n'));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
