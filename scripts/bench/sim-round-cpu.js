'use strict';
// What llm-sim spends per round under Skald and under the architecture skeleton, in one run: the turn
// bench's stack, warm-up and fresh phase (turn.js), then the skeleton's fresh phase with its
// Skald-size request, then Skald's again (what is order, what is Skald). Per round, for the llm-sim
// process: CPU of its main thread and of its other threads (V8's compiler and GC helpers, libuv)
// from /proc/<pid>/task/*/schedstat, voluntary context switches (wake-ups) of the main thread, read
// and write syscalls (/proc/<pid>/io), and its chat-completions requests (its own log). With
// --prof <dir>, llm-sim runs under --cpu-prof and each phase's samples are summed by function.
//
//   node scripts/bench/sim-round-cpu.js --quick [--fresh 30] [--warm-turns 30] [--idle 10500] [--prof <dir>]
//
// (turn.js reads the same argv: --fresh and --warm-turns apply to both systems.)
const { execFileSync } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const bench = require('./turn');
const { startSkeleton } = require('./floor/skeleton');

const ROOT = path.resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const i = argv.indexOf('--prof');
const PROF = i >= 0 ? path.resolve(ROOT, argv[i + 1]) : null;
// --idle <ms>: an idle wait just before each phase's window, as turn.js's SQL meter settles (10500).
const j = argv.indexOf('--idle');
const IDLE_MS = j >= 0 ? Number(argv[j + 1]) : 0;
const idle =
  IDLE_MS > 0 ? { start: () => new Promise((r) => setTimeout(r, IDLE_MS)), stop: () => Promise.resolve(null) } : null;
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

function simCounters(pid) {
  const c = { mainNs: 0, otherNs: 0, wakes: 0, syscr: 0, syscw: 0 };
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      const ns = Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
      if (Number(t) === pid) {
        c.mainNs += ns;
        c.wakes = Number(
          /voluntary_ctxt_switches:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/task/${t}/status`, 'utf8'))?.[1],
        );
      } else c.otherNs += ns;
    } catch {
      /* thread gone */
    }
  }
  const io = fs.readFileSync(`/proc/${pid}/io`, 'utf8');
  c.syscr = Number(/syscr: (\d+)/.exec(io)?.[1]);
  c.syscw = Number(/syscw: (\d+)/.exec(io)?.[1]);
  return c;
}

/** Runs a fresh phase (turn.js's) and returns llm-sim's figures per round of it. */
const jit = {};
let simLogs = [];
async function phase(name, target, users, sim, simPid, windows) {
  const last = (await sim.requests()).at(-1)?.id ?? 0;
  let c0 = null;
  const meter = {
    start: () => (c0 = simCounters(simPid)),
    stop: () => {
      const c1 = simCounters(simPid);
      return Object.fromEntries(Object.keys(c1).map((k) => [k, c1[k] - c0[k]]));
    },
  };
  const from = monoUs();
  let logFrom = 0;
  const r = await bench.skaldFresh(
    target,
    users,
    sim,
    { start: () => ((logFrom = simLogs.length), meter.start()), stop: () => meter.stop() },
    idle,
  );
  windows[name] = { from, to: monoUs() };
  jit[name] = simLogs.slice(logFrom, simLogs.length);
  const requests = (await sim.requests({ sinceId: last })).length;
  const rounds = bench.CFG.fresh * bench.PER_ROUND_ROUNDS;
  const d = r.cpuMsPerRoundByProcess; // the meter's fields, each divided by rounds
  return {
    mainCpuMs: +(d.mainNs / 1e6).toFixed(3),
    otherThreadsCpuMs: +(d.otherNs / 1e6).toFixed(3),
    wakes: +d.wakes.toFixed(2),
    readSyscalls: +d.syscr.toFixed(2),
    writeSyscalls: +d.syscw.toFixed(2),
    requests: +(requests / rounds).toFixed(2),
    msPerRound: +r.msPerRoundFresh.toFixed(2),
  };
}

async function main() {
  const infra = await bench.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  let skel = null;
  /** @type {Record<string, any>} */
  const out = {};
  const windows = {};
  const workspaces = fs.mkdtempSync(path.join(os.tmpdir(), 'skald-simcpu-'));
  try {
    if (PROF) fs.mkdirSync(PROF, { recursive: true });
    const gcLog = path.join(os.tmpdir(), `skald-sim-gc-${process.pid}.jsonl`);
    const simArgs = ['-r', path.join(__dirname, 'gc-log.js')];
    if (argv.includes('--trace-jit')) simArgs.push('--trace-opt', '--trace-deopt');
    if (PROF) simArgs.push('--cpu-prof', `--cpu-prof-dir=${PROF}`, '--cpu-prof-name=llm-sim.cpuprofile');
    process.env.SKALD_GC_LOG = gcLog; // the stack's apps inherit it; only llm-sim loads gc-log.js
    stack = await bench.startStack(infra, { 'llm-sim': simArgs });
    out.gcLog = gcLog;
    const { LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const simPid = stack.byName('llm-sim')[0].child.pid;
    simLogs = stack.byName('llm-sim')[0].logs;
    const users = await bench.makeUsers(stack, bench.CFG.users);
    const skelUsers = Array.from({ length: bench.CFG.users }, () => {
      const id = randomUUID();
      fs.mkdirSync(path.join(workspaces, id), { mode: 0o700 });
      fs.writeFileSync(path.join(workspaces, id, bench.FILE), bench.FILE_TEXT);
      return { token: id };
    });
    skel = await startSkeleton({
      databaseUrl: infra.pg.url('skeleton'),
      simUrl: stack.simUrl,
      workspaces,
      requestSize: 'skald',
      PrivateNats: require(path.join(ROOT, 'libs/testing/dist')).PrivateNats,
    });
    const gw = { gatewayUrl: skel.gatewayUrl };
    await bench.warmUp(stack, users, sim);
    out.skald = await phase('skald', stack, users, sim, simPid, windows);
    await bench.warmUp(gw, skelUsers, sim);
    out.skeletonSkaldSize = await phase('skeletonSkaldSize', gw, skelUsers, sim, simPid, windows);
    await bench.warmUp(stack, users, sim);
    out.skaldAgain = await phase('skaldAgain', stack, users, sim, simPid, windows);
  } finally {
    await skel?.stop();
    await stack?.stop();
    fs.rmSync(workspaces, { recursive: true, force: true });
  }
  const gcLog = out.gcLog;
  delete out.gcLog;
  const gcs = fs.existsSync(gcLog)
    ? fs
        .readFileSync(gcLog, 'utf8')
        .trim()
        .split('\n')
        .map((l) => JSON.parse(l))
    : [];
  fs.rmSync(gcLog, { force: true });
  const rounds = bench.CFG.fresh * bench.PER_ROUND_ROUNDS;
  for (const [k, w] of Object.entries(windows)) {
    const inside = gcs.filter((g) => g.at >= w.from && g.at <= w.to);
    for (const kind of ['minor', 'major', 'incremental']) {
      const of = inside.filter((g) => g.kind === kind);
      out[k][`${kind} GCs`] = +(of.length / rounds).toFixed(3);
      out[k][`${kind} GC ms`] = +(of.reduce((a, g) => a + g.ms, 0) / rounds).toFixed(3);
    }
  }
  for (const [k, lines] of Object.entries(jit)) {
    if (lines.length === 0) continue;
    const count = (re) => {
      const m = new Map();
      for (const l of lines) {
        const x = re.exec(l);
        if (x) m.set(x[1], (m.get(x[1]) ?? 0) + 1);
      }
      return [...m.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 12)
        .map(([f, n]) => `${f}×${n}`)
        .join(' ');
    };
    out[k].optimized = lines.filter(
      (l) => l.includes('completed optimizing') || l.includes('completed compiling'),
    ).length;
    out[k].deopts = lines.filter((l) => /deoptimiz|bailout/.test(l)).length;
    console.log(
      `${k}: ${lines.length} JIT lines; compiled: ${count(/completed (?:optimizing|compiling) 0x[0-9a-f]+ <JSFunction (\S*)/)}`,
    );
    console.log(`${k}: deopts: ${count(/deoptimizing 0x[0-9a-f]+, <JSFunction (\S*)/)}`);
  }
  console.log(`llm-sim per round (load ${os.loadavg()[0].toFixed(2)}):`);
  console.table(out);
  if (PROF) {
    const file = path.join(PROF, 'llm-sim.cpuprofile');
    const text = Object.entries(windows)
      .map(
        ([k, w]) =>
          `== ${k}\n${execFileSync(process.execPath, [path.join(__dirname, 'profile-functions.js'), file, '--window', `${w.from},${w.to}`, '--top', '40'], { encoding: 'utf8' })}`,
      )
      .join('\n');
    fs.writeFileSync(path.join(PROF, 'summary.txt'), text);
    console.log(`profile summary: ${path.relative(ROOT, path.join(PROF, 'summary.txt'))}`);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
