'use strict';
// Where a message's echo goes: fresh conversations each send one message through the stack the
// turn benchmark runs (the five apps as separate processes, llm-sim), on a private Postgres that
// logs every statement with its duration. Each statement that ends between the client's send and
// the echo's arrival (`user_message` on the sender's socket) is placed on that message's timeline
// in ms after the send, with the Postgres role that ran it (each app has its own).
//
//   node scripts/bench/echo-trace.js [--turns 20] [--show 3] [--gap 300] [--profile]
//
// SKALD_TRACE_ROOT=<checkout> traces another built checkout with this script (a before/after).
//
// Prints the timelines of the last `--show` turns and, over all turns, the median time at which
// each step of the echo path ended and what it took. The clocks are the same machine's: the
// client's Date.now() and Postgres' log timestamps (both ms).
//
// --profile: the gateway and the session worker run with a CPU profile (sampled every 100 µs, kept
// in test-results/bench/echo-profiles/); for each step, the ms each of them was busy within it
// (mean over the turns) and the functions that took that time (self time, summed over the turns).
// The wall time of a step that neither was busy in is hops: sockets, NATS, Postgres, timers.
// ECHO_TRACE_TOP=<n>: how many functions the inclusive lists show (12).
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(process.env.SKALD_TRACE_ROOT ?? path.join(__dirname, '../..'));
const WebSocket = require(path.join(ROOT, 'node_modules/ws'));
const { migrateUp } = require(path.join(ROOT, 'libs/persistence/dist'));
const { Stack, ApiClient, LlmSimAdminClient, PrivatePostgres, PrivateRedis } = require(
  path.join(ROOT, 'libs/testing/dist'),
);
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? Number(argv[i + 1]) : dflt;
};
const TURNS = opt('turns', 20);
const SHOW = opt('show', 3);
const PROFILE = argv.includes('--profile');
/** ms between one turn's end and the next message (the turn bench's fresh phase sends at once: --gap 0). */
const GAP_MS = opt('gap', 300);
const PROFILE_DIR = path.join(ROOT, 'test-results/bench/echo-profiles');
const PROFILED = ['gateway', 'session-worker'];
/** Now on the clock a .cpuprofile's timestamps use (CLOCK_MONOTONIC, microseconds). */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/**
 * The steps of the echo path, each ended by the session worker's statement that matches (its last
 * one): the submit's statement, the lease take, the start read, and the first commit (one prepared
 * statement, or the transaction's COMMIT).
 */
const STEPS = [
  ['submit', /^execute (<unnamed>|skald_submit_v\d+): WITH s AS/],
  ['lease take', /^execute <unnamed>: WITH prev AS/],
  ['start read', /^execute skald_turn_start/],
  ['first commit', /^execute skald_commit|^statement: COMMIT|^execute <unnamed>: COMMIT/],
];

/** One fresh conversation's message: its send time and its echo's, both Date.now() ms. */
async function oneTurn(gatewayUrl, token, marker) {
  const url = new URL('/api/ws', gatewayUrl.replace(/^http/, 'ws'));
  url.searchParams.set('source', `trace-${marker}`);
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  const t = { sent: 0, sentUs: 0, ack: 0, echo: 0, done: 0, echoFirst: false };
  await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error('no hello / echo / done')), 30_000);
    ws.on('message', (data) => {
      const f = JSON.parse(data.toString('utf8'));
      if (f.type === 'hello') {
        t.sent = Date.now();
        t.sentUs = monoUs();
        ws.send(JSON.stringify({ type: 'message', client_message_id: randomUUID(), content: `trace ${marker}` }));
      }
      if (f.type === 'ack' && !t.ack) t.ack = Date.now();
      if (f.type === 'user_message' && !t.echo) {
        t.echo = Date.now();
        t.echoFirst = !t.ack;
      }
      if (f.type === 'done' || f.type === 'error') {
        t.done = Date.now();
        clearTimeout(timer);
        resolve();
      }
    });
    ws.once('error', reject);
  });
  ws.close();
  return t;
}

/** Postgres' log: `<ts>@<role>@<pid>@LOG:  duration: <ms> ms  <what>` (continuation lines ignored). */
function statements(logFile) {
  const out = [];
  const re = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}) (\w+)@(\w*)@(\d+)@LOG:\s+duration: ([\d.]+) ms\s+(.*)$/;
  for (const line of fs.readFileSync(logFile, 'utf8').split('\n')) {
    const m = re.exec(line);
    if (!m) continue;
    const end = Date.parse(`${m[1].replace(' ', 'T')}Z`);
    out.push({ end, ms: Number(m[5]), role: m[3], pid: m[4], what: m[6].replace(/\s+/g, ' ').slice(0, 110) });
  }
  return out;
}

async function main() {
  const pg = await PrivatePostgres.start({
    settings: { log_min_duration_statement: '0', log_line_prefix: '%m@%u@%p@', log_timezone: 'UTC' },
  });
  const redis = await PrivateRedis.start();
  process.env.REDIS_URL = redis.url;
  let stack = null;
  try {
    const { Client } = require(path.join(ROOT, 'node_modules/pg'));
    const admin = new Client({ connectionString: pg.url('postgres') });
    await admin.connect();
    await admin.query('CREATE DATABASE skald');
    await admin.end();
    await migrateUp(pg.url('skald'));
    if (PROFILE) {
      fs.rmSync(PROFILE_DIR, { recursive: true, force: true });
      fs.mkdirSync(PROFILE_DIR, { recursive: true });
    }
    stack = await Stack.start({
      root: ROOT,
      env: { DATABASE_URL: pg.url('skald'), DATABASE_POOL_SIZE: '5', LOG_LEVEL: 'info' },
      ...(PROFILE
        ? {
            nodeArgs: Object.fromEntries(
              PROFILED.map((a) => [
                a,
                [
                  '--cpu-prof',
                  '--cpu-prof-interval=100',
                  `--cpu-prof-dir=${PROFILE_DIR}`,
                  `--cpu-prof-name=${a}.cpuprofile`,
                ],
              ]),
            ),
          }
        : {}),
    });
    const sim = new LlmSimAdminClient(stack.simUrl);
    const api = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    const user = await api.createUser(`trace-${randomUUID().slice(0, 8)}@skald.test`, 'correct horse battery');
    const turns = [];
    for (let i = 0; i < TURNS + 2; i++) {
      const marker = randomUUID().slice(0, 13);
      await sim.script({ match: marker, matchIn: 'last_user', replies: [{ content: 'ok' }] });
      const t = await oneTurn(stack.gatewayUrl, user.token, marker);
      if (i >= 2) turns.push(t); // the first two warm the apps' statement caches
      await sleep(GAP_MS);
    }
    await sleep(500);
    const log = statements(path.join(pg.dir, 'log'));
    const byStep = new Map(STEPS.map(([name]) => [name, []]));
    /** Per step, Postgres' own ms for its statement: parse + bind + execute on that backend within the step. */
    const pgMs = new Map(STEPS.map(([name]) => [name, []]));
    const echo = [];
    const worker = log.filter((s) => s.role === 'skald_session_worker');
    turns.forEach((t, n) => {
      const within = log.filter((s) => s.end >= t.sent && s.end <= t.echo + 1);
      echo.push(t.echo - t.sent);
      let from = t.sent;
      t.steps = [];
      for (const [name, re] of STEPS) {
        const hit = worker.find((s) => s.end >= from && s.end <= t.echo + 1 && re.test(s.what));
        if (!hit) continue;
        byStep.get(name).push(hit.end - t.sent);
        const stmt = /^execute (\S+):/.exec(hit.what)?.[1];
        if (stmt)
          pgMs.get(name).push(
            worker
              .filter((s) => s.pid === hit.pid && s.end >= from && s.end <= hit.end)
              .filter((s) => s.what.startsWith(`parse ${stmt}:`) || s.what.startsWith(`bind ${stmt}:`) || s === hit)
              .reduce((sum, s) => sum + s.ms, 0),
          );
        t.steps.push({ name, from: from - t.sent, to: hit.end - t.sent });
        from = hit.end;
      }
      t.steps.push({ name: 'echo', from: from - t.sent, to: t.echo - t.sent });
      // Statements the session worker ran between the send and the echo (parse, bind and execute
      // of one statement are one round trip; BEGIN, each statement and COMMIT of a transaction one each).
      t.workerStatements = within.filter(
        (s) => s.role === 'skald_session_worker' && !/^(parse|bind) /.test(s.what),
      ).length;
      if (n >= turns.length - SHOW) {
        console.log(`\nturn ${n + 1}: echo ${t.echo - t.sent} ms, done ${t.done - t.sent} ms after the send`);
        for (const s of within)
          console.log(
            `  ${String(s.end - t.sent).padStart(4)} ms  ${s.ms.toFixed(2).padStart(6)} ms  ${s.role.padEnd(16)} ${s.what}`,
          );
      }
    });
    console.log(
      `\n${turns.length} fresh conversations, load ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores`,
    );
    console.log(`echo (median): ${median(echo)} ms after the send; min ${Math.min(...echo)}, max ${Math.max(...echo)}`);
    console.log(
      `ack (median): ${median(turns.map((t) => t.ack - t.sent))} ms after the send; the echo came before the ack in ${
        turns.filter((t) => t.echoFirst).length
      } of ${turns.length}`,
    );
    console.log(
      `session worker statements (round trips) between send and echo (median): ${median(turns.map((t) => t.workerStatements))}`,
    );
    let prev = 0;
    for (const [name, ends] of byStep) {
      if (ends.length === 0) continue;
      const at = median(ends);
      const pgStep = pgMs.get(name);
      console.log(
        `  ${name.padEnd(13)} ends at ${String(at).padStart(4)} ms (median of ${ends.length}); step ${at - prev} ms` +
          (pgStep.length ? `; Postgres parse + bind + execute ${median(pgStep).toFixed(2)} ms (median)` : ''),
      );
      prev = at;
    }
    console.log(
      `  ${'echo'.padEnd(13)} arrives at ${String(median(echo)).padStart(4)} ms; step ${median(echo) - prev} ms`,
    );
    if (PROFILE) {
      await stack.stop();
      stack = null;
      profileSteps(turns);
    }
  } finally {
    await stack?.stop();
    await redis.destroy();
    await pg.destroy();
  }
}

/**
 * Per step of the echo path (ms after the send, the step boundaries of each turn as found in
 * Postgres' log, so ±1 ms), each profiled app's busy ms within it (mean over the turns) and the
 * functions that took most of it (self time, summed over the turns).
 */
function profileSteps(turns) {
  const names = ['submit', 'lease take', 'start read', 'first commit', 'echo'];
  for (const app of PROFILED) {
    const file = path.join(PROFILE_DIR, `${app}.cpuprofile`);
    if (!fs.existsSync(file)) continue;
    const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
    const byId = new Map(prof.nodes.map((x) => [x.id, x]));
    const parent = new Map();
    for (const x of prof.nodes) for (const c of x.children ?? []) parent.set(c, x.id);
    const samples = [];
    let at = prof.startTime;
    for (let i = 0; i < prof.samples.length; i++) {
      at += prof.timeDeltas[i] ?? 0;
      samples.push([at, prof.samples[i], prof.timeDeltas[i + 1] ?? 0]);
    }
    console.log(`\n== ${app}: busy ms per step (mean over ${turns.length} turns) and its top functions (self time)`);
    for (const name of names) {
      const self = new Map();
      /** Inclusive time of Skald's own functions (apps/, libs/): each sample once per function on its stack. */
      const incl = new Map();
      let busy = 0;
      let wall = 0;
      for (const t of turns) {
        const step = t.steps.find((s) => s.name === name);
        if (!step) continue;
        wall += step.to - step.from;
        const lo = t.sentUs + step.from * 1000;
        const hi = t.sentUs + step.to * 1000;
        for (const [ts, id, us] of samples) {
          if (ts < lo || ts >= hi) continue;
          const cf = byId.get(id).callFrame;
          if (cf.functionName === '(idle)') continue;
          busy += us;
          const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '')}:${cf.lineNumber + 1}`;
          self.set(key, (self.get(key) ?? 0) + us);
          const onStack = new Set();
          for (let n = id; n !== undefined; n = parent.get(n)) {
            const f = byId.get(n).callFrame;
            if (!/\/(apps|libs)\/[^/]+\/dist\//.test(f.url)) continue;
            onStack.add(
              `${f.functionName || '(anonymous)'} ${f.url.replace(/^file:\/\//, '').replace(`${ROOT}/`, '')}:${f.lineNumber + 1}`,
            );
          }
          for (const k of onStack) incl.set(k, (incl.get(k) ?? 0) + us);
        }
      }
      if (wall === 0 && busy === 0) continue;
      const n = turns.length;
      console.log(`  ${name.padEnd(13)} wall ${(wall / n).toFixed(1)} ms, busy ${(busy / n / 1000).toFixed(2)} ms`);
      for (const [k, us] of [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8))
        console.log(`      ${(us / n / 1000).toFixed(3).padStart(6)} ms  ${k}`);
      console.log('    inclusive (apps/ and libs/ functions):');
      for (const [k, us] of [...incl.entries()]
        .sort((a, b) => b[1] - a[1])
        .slice(0, Number(process.env.ECHO_TRACE_TOP ?? 12)))
        console.log(`      ${(us / n / 1000).toFixed(3).padStart(6)} ms  ${k}`);
    }
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
