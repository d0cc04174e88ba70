'use strict';
// One session-worker process against two, alternating on ONE stack within one run: this machine's
// load varies ~30 % from one run of turn.js to the next (other jobs share the cores), more than
// the difference looked for. The stack starts with 2 workers (turn.js's, `--workers 2` implied);
// for a 1-worker phase the second worker is stopped (SIGTERM: it drains), for the next 2-worker
// phase a new one is started and warmed by an unmeasured 50-conversation load (its JIT), so each
// measured phase is the same load of turn.js (`skaldLoad`: 3 tool rounds at 200 ms, closed loop).
//
//   node scripts/bench/workers-ab.js [--reps 3] [--turns50 3] [--turns200 2] [--warm-turns 12] [--long 0]
//
// `--long N`: after the loads, one conversation of N turns (turn.js's, 5 tool rounds at 0 ms) with
// 2 workers and then with 1: ms per round of its first 20 turns and of its last 20 (a turn that
// lands on the other worker than the one keeping the conversation's history re-reads it).
//
// Prints, per phase, turns/s at 50 and 200 (of ideal), CPU ms a turn (all processes, and the
// worker processes) and the cores' busy share; then the medians by worker count.
process.argv.push('--workers', '2');
const os = require('node:os');
const path = require('node:path');
const ROOT = path.resolve(__dirname, '../..');
const { LlmSimAdminClient, stopProcess } = require(path.join(ROOT, 'libs/testing/dist'));
const T = require('./turn');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : dflt;
};
const REPS = opt('reps', 3);
const LONG = opt('long', 0);
T.CFG.long = LONG;
T.CFG.loadTurns[50] = opt('turns50', 3);
T.CFG.loadTurns[200] = opt('turns200', 2);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor((xs.length - 1) / 2)];
const log = (...a) => console.log(...a);

async function main() {
  log(
    `workers A/B: ${REPS} repetitions of 2 then 1 worker (order alternating); load ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores`,
  );
  const infra = await T.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  /** @type {any[]} */
  const results = [];
  try {
    stack = await T.startStack(infra);
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await T.makeUsers(stack, T.CFG.users);
    await T.warmUp(stack, users, sim);
    // Both workers warmed by load (the warm-up's turns go to either).
    await T.skaldLoad(stack, users, sim, 50);
    const live = () =>
      stack.byName('session-worker').filter((p) => p.child.exitCode === null && p.child.signalCode === null);
    const setWorkers = async (n) => {
      while (live().length > n) await stopProcess(live().at(-1).child, 'SIGTERM', 10_000);
      if (live().length < n) {
        while (live().length < n) await stack.addReplica('session-worker');
        await T.skaldLoad(stack, users, sim, 50); // the new one's JIT, unmeasured
      }
    };
    for (let rep = 0; rep < REPS; rep++) {
      for (const n of rep % 2 === 0 ? [2, 1] : [1, 2]) {
        await setWorkers(n);
        const procs = live();
        const groups = T.stackGroups(
          {
            ...stack,
            processes: stack.processes.filter((p) => p.name !== 'session-worker' || procs.includes(p)),
            nats: stack.nats,
          },
          infra.pg,
        );
        const cpu = new T.CpuMeter(groups);
        const workers = new T.CpuMeter(
          Object.fromEntries(procs.map((p, i) => [`w${i}`, () => [{ pid: p.child.pid }]])),
        );
        const row = { rep, workers: n };
        for (const c of [50, 200]) {
          workers.start();
          const r = await T.skaldLoad(stack, users, sim, c, { cpu });
          const w = workers.stop();
          row[c] = {
            turnsPerSec: r.turnsPerSec,
            ofIdeal: r.turnsPerSec / r.ideal,
            errors: r.errors,
            cpuMsPerTurn: r.cpuMsPerTurn,
            workerMsPerTurn: Object.values(w).map((x) => x / (r.turnsPerSec * r.seconds)),
            postgresMsPerTurn: r.cpuMsPerTurnByProcess?.postgres,
            busy: r.busy,
            load1: os.loadavg()[0],
          };
        }
        results.push(row);
        const f = (x) =>
          `${x.turnsPerSec.toFixed(1)} t/s = ${(100 * x.ofIdeal).toFixed(0)} % (${x.errors} err), ${x.cpuMsPerTurn.toFixed(1)} CPU ms/turn [workers ${x.workerMsPerTurn.map((v) => v.toFixed(1)).join(' + ')}, postgres ${x.postgresMsPerTurn?.toFixed(1)}], busy ${(100 * x.busy).toFixed(0)} %, load ${x.load1.toFixed(1)}`;
        log(
          `rep ${rep + 1}, ${n} worker${n > 1 ? 's' : ''}:  at 50: ${f(row[50])}\n                      at 200: ${f(row[200])}`,
        );
      }
    }
    for (const n of LONG > 0 ? [2, 1] : []) {
      await setWorkers(n);
      const r = await T.skaldLong(stack, users, sim);
      results.push({ long: true, workers: n, ...r });
      log(
        `one conversation of ${LONG} turns, ${n} worker${n > 1 ? 's' : ''}: ms per round ${r.msPerRoundEarly.toFixed(2)} → ${r.msPerRoundLate.toFixed(2)} = ${(r.msPerRoundLate / r.msPerRoundEarly).toFixed(2)}×`,
      );
    }
  } finally {
    if (stack) await stack.stop().catch((e) => log(`stack stop: ${e.message}`));
    await infra.admin.end().catch(() => undefined);
    await infra.pg.destroy();
    await infra.redis.destroy();
  }
  if (REPS > 0) log('\nmedians by worker count:');
  for (const n of REPS > 0 ? [1, 2] : []) {
    const rs = results.filter((r) => r.workers === n && !r.long);
    const m = (c, k) => median(rs.map((r) => r[c][k]));
    log(
      `  ${n} worker${n > 1 ? 's' : ' '}: at 50 ${m(50, 'turnsPerSec').toFixed(1)} t/s = ${(100 * m(50, 'ofIdeal')).toFixed(0)} %, ${m(50, 'cpuMsPerTurn').toFixed(1)} CPU ms/turn; ` +
        `at 200 ${m(200, 'turnsPerSec').toFixed(1)} t/s = ${(100 * m(200, 'ofIdeal')).toFixed(0)} %, ${m(200, 'cpuMsPerTurn').toFixed(1)} CPU ms/turn`,
    );
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
