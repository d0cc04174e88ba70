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
//
// --hops: the apps run with SKALD_HOP_TRACE (libs/messaging/src/hop-trace.ts): each process marks
// named points (a WebSocket frame read, a NATS socket read or write, a request sent, a handler
// entered, the submit's statement sent and returned, a reply or event published, a WebSocket frame
// sent, the socket uncorked) on the machine's monotonic clock, the one the client's send, ack and
// echo are stamped with here; prints, per hop of the echo's way, the median µs at which it
// ended (after the client's send) and the median step, over the turns. Adds a few µs per mark.
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
const HOPS = argv.includes('--hops');
/** --explain: Postgres logs each statement's plan with its timings (auto_explain); the last submit's is printed. */
const EXPLAIN = argv.includes('--explain');
const HOP_FILE = path.join(os.tmpdir(), `echo-trace-hops-${process.pid}.txt`);
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
/**
 * A map's entry for a key every caller put there first.
 * @template K, V
 * @param {Map<K, V>} map
 * @param {K} key
 * @returns {V}
 */
function entry(map, key) {
  const v = map.get(key);
  if (v === undefined) throw new Error(`no entry ${String(key)}`);
  return v;
}

/** @type {Array<[string, RegExp]>} */
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
  const t = { sent: 0, sentUs: 0, ack: 0, echo: 0, ackUs: 0, echoUs: 0, done: 0, echoFirst: false };
  await new Promise(
    /** @param {(v?: unknown) => void} resolve */ (resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('no hello / echo / done')), 30_000);
      ws.on('message', (data) => {
        const f = JSON.parse(data.toString('utf8'));
        if (f.type === 'hello') {
          t.sent = Date.now();
          t.sentUs = monoUs();
          ws.send(JSON.stringify({ type: 'message', client_message_id: randomUUID(), content: `trace ${marker}` }));
        }
        if (f.type === 'ack' && !t.ack) {
          t.ack = Date.now();
          t.ackUs = monoUs();
        }
        if (f.type === 'user_message' && !t.echo) {
          t.echo = Date.now();
          t.echoUs = monoUs();
          t.echoFirst = !t.ack;
        }
        if (f.type === 'done' || f.type === 'error') {
          t.done = Date.now();
          clearTimeout(timer);
          resolve();
        }
      });
      ws.once('error', reject);
    },
  );
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
    settings: {
      log_min_duration_statement: '0',
      log_line_prefix: '%m@%u@%p@',
      log_timezone: 'UTC',
      ...(EXPLAIN
        ? {
            shared_preload_libraries: 'auto_explain',
            'auto_explain.log_min_duration': '0',
            'auto_explain.log_analyze': 'on',
            'auto_explain.log_timing': 'on',
            'auto_explain.log_triggers': 'on',
          }
        : {}),
    },
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
      env: {
        DATABASE_URL: pg.url('skald'),
        DATABASE_POOL_SIZE: '5',
        LOG_LEVEL: 'info',
        ...(HOPS ? { SKALD_HOP_TRACE: HOP_FILE } : {}),
      },
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
    const byStep = new Map(STEPS.map(([name]) => [name, /** @type {number[]} */ ([])]));
    /** Per step, Postgres' own ms for its statement: parse + bind + execute on that backend within the step. */
    const pgMs = new Map(STEPS.map(([name]) => [name, /** @type {number[]} */ ([])]));
    /** The same, split: parse, bind (planning, for a custom plan) and execute. */
    const pgParts = new Map(
      STEPS.map(([name]) => [
        name,
        /** @type {Record<'parse' | 'bind' | 'execute', number[]>} */ ({ parse: [], bind: [], execute: [] }),
      ]),
    );
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
        entry(byStep, name).push(hit.end - t.sent);
        const stmt = /^execute (\S+):/.exec(hit.what)?.[1];
        if (stmt) {
          const parts = worker
            .filter((s) => s.pid === hit.pid && s.end >= from && s.end <= hit.end)
            .filter((s) => s.what.startsWith(`parse ${stmt}:`) || s.what.startsWith(`bind ${stmt}:`) || s === hit);
          entry(pgMs, name).push(parts.reduce((sum, s) => sum + s.ms, 0));
          const split = entry(pgParts, name);
          for (const kind of /** @type {const} */ (['parse', 'bind']))
            split[kind].push(parts.filter((s) => s.what.startsWith(`${kind} `)).reduce((sum, s) => sum + s.ms, 0));
          split.execute.push(hit.ms);
        }
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
      const pgStep = entry(pgMs, name);
      console.log(
        `  ${name.padEnd(13)} ends at ${String(at).padStart(4)} ms (median of ${ends.length}); step ${at - prev} ms` +
          (pgStep.length
            ? `; Postgres parse + bind + execute ${median(pgStep).toFixed(2)} ms (median; parse ${median(
                entry(pgParts, name).parse,
              ).toFixed(2)}, bind ${median(entry(pgParts, name).bind).toFixed(2)}, execute ${median(
                entry(pgParts, name).execute,
              ).toFixed(2)})`
            : ''),
      );
      prev = at;
    }
    console.log(
      `  ${'echo'.padEnd(13)} arrives at ${String(median(echo)).padStart(4)} ms; step ${median(echo) - prev} ms`,
    );
    if (PROFILE || HOPS) {
      await stack.stop();
      stack = null;
    }
    if (PROFILE) profileSteps(turns);
    if (HOPS) hopSteps(turns);
    if (EXPLAIN) {
      // auto_explain's entries: a `duration: … ms  plan:` line, then the plan's lines (no prefix).
      const lines = fs.readFileSync(path.join(pg.dir, 'log'), 'utf8').split('\n');
      let last = null;
      for (let i = 0; i < lines.length; i++) {
        if (!/LOG:\s+duration: [\d.]+ ms\s+plan:/.test(lines[i])) continue;
        let j = i + 1;
        while (j < lines.length && !/^\d{4}-\d\d-\d\d /.test(lines[j])) j++;
        const block = lines.slice(i, j);
        if (block.some((l) => /skald_session_worker/.test(l)) || /skald_session_worker/.test(lines[i]))
          if (block.some((l) => /SELECT id FROM sessions WHERE user_id = \$1::uuid AND source = \$2::text/.test(l)))
            last = block;
        i = j - 1;
      }
      console.log('\n== the last submit statement, auto_explain (analyze):');
      const plan = last ? last.slice(last.findIndex((l) => l.includes('(cost=') || l.includes('(actual'))) : null;
      console.log(last && plan ? [last[0], ...plan].join('\n') : 'not found');
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

/**
 * The echo's way, hop by hop: [name, app, point, detail test, side]. Each hop is the first mark of
 * that app and point (and detail) after the previous hop's, within the turn's send … echo (+2 ms).
 * A side hop (the echo's own marks, whose place among the answer's depends on the code) is looked
 * for after the hop `side.after` names, and its step is measured from there; the next hops go on
 * from the previous main hop.
 */
/**
 * Each hop: its name, the app and trace point it is read at, a test of the point's detail, and whether it is a side
 * step (not on the path from the previous hop).
 * @type {Array<[string, string, string, ((detail: string) => boolean)?, boolean?]>}
 */
/** @type {Array<[string, string, string, ((detail: string) => boolean)?, { after: string }?]>} */
const HOP_STEPS = [
  ['gateway: frame read (ws message)', 'gateway', 'ws.frame'],
  ['gateway: frame parsed', 'gateway', 'ws.parsed'],
  ['gateway: submit request queued', 'gateway', 'mux.request', (d) => d === 'session.submit'],
  ['gateway: NATS write', 'gateway', 'nats.write'],
  ['worker: NATS read', 'session-worker', 'nats.read'],
  ['worker: submit handler entered', 'session-worker', 'bus.handle', (d) => d === 'session.submit'],
  ['worker: request parsed', 'session-worker', 'bus.handle.parsed', (d) => d === 'session.submit'],
  ['worker: statement called', 'session-worker', 'sql.submit'],
  ['worker: pool client handed out (write)', 'session-worker', 'pg.acquire'],
  ['worker: Postgres answer read', 'session-worker', 'pg.read'],
  ['worker: statement returned', 'session-worker', 'sql.submit.done'],
  ['worker: reply queued', 'session-worker', 'bus.respond', (d) => d === 'session.submit'],
  [
    'worker: echo published',
    'session-worker',
    'bus.publish',
    (d) => d.startsWith('events'),
    { after: 'worker: statement returned' },
  ],
  ['worker: NATS write', 'session-worker', 'nats.write'],
  ['gateway: NATS read', 'gateway', 'nats.read'],
  ['gateway: reply taken', 'gateway', 'mux.reply', (d) => d === 'session.submit'],
  ['gateway: echo read', 'gateway', 'bus.forwarded', (d) => d === 'events', { after: 'gateway: NATS read' }],
  ['gateway: echo held', 'gateway', 'ws.held', undefined, { after: 'gateway: NATS read' }],
  ['gateway: reply parsed', 'gateway', 'bus.replied', (d) => d === 'session.submit'],
  ['gateway: ack sent (ws.send)', 'gateway', 'ws.send', (d) => d === 'ack'],
  ['gateway: echo sent (ws.send)', 'gateway', 'ws.send', (d) => d.startsWith('seq:')],
  ['gateway: socket uncorked', 'gateway', 'ws.uncork'],
];

function hopSteps(turns) {
  if (!fs.existsSync(HOP_FILE)) {
    console.log('\nno hop trace written (the apps of this checkout have no SKALD_HOP_TRACE)');
    return;
  }
  const marks = fs
    .readFileSync(HOP_FILE, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => {
      const [us, pid, app, point, detail = ''] = l.split(' ');
      return { us: Number(us), pid, app, point, detail };
    })
    .sort((a, b) => a.us - b.us);
  // ECHO_TRACE_KEEP_HOPS=<file>: the raw marks are kept there, and beside them (<file>.turns.json)
  // each turn's send, ack and echo (µs, the same clock) — e.g. to lay `perf sched` (-k CLOCK_MONOTONIC) over them.
  if (process.env.ECHO_TRACE_KEEP_HOPS) {
    fs.copyFileSync(HOP_FILE, process.env.ECHO_TRACE_KEEP_HOPS);
    fs.writeFileSync(
      `${process.env.ECHO_TRACE_KEEP_HOPS}.turns.json`,
      JSON.stringify(turns.map((t) => ({ sentUs: t.sentUs, ackUs: t.ackUs, echoUs: t.echoUs }))),
    );
  }
  fs.rmSync(HOP_FILE, { force: true });
  const appOf = (m) =>
    m.app.startsWith('session-worker') ? 'session-worker' : m.app.startsWith('gateway') ? 'gateway' : m.app;
  const ends = new Map(HOP_STEPS.map(([name]) => [name, /** @type {number[]} */ ([])]));
  const steps = new Map(HOP_STEPS.map(([name]) => [name, /** @type {number[]} */ ([])]));
  /** @type {Record<'ack' | 'echo' | 'ackStep' | 'echoStep', number[]>} */
  const tail = { ack: [], echo: [], ackStep: [], echoStep: [] };
  const other = new Map();
  let shown = 0;
  for (const t of turns) {
    const within = marks.filter((m) => m.us >= t.sentUs && m.us <= t.echoUs + 2000);
    let from = t.sentUs;
    let missing = false;
    const line = [];
    const at = new Map();
    for (const [name, app, point, test, side] of HOP_STEPS) {
      const start = side ? at.get(side.after) : from;
      const hit =
        start === undefined
          ? undefined
          : within.find((m) => m.us >= start && appOf(m) === app && m.point === point && (!test || test(m.detail)));
      if (!hit) {
        missing = true;
        continue;
      }
      at.set(name, hit.us);
      entry(ends, name).push(hit.us - t.sentUs);
      entry(steps, name).push(hit.us - start);
      line.push(`${name} +${hit.us - t.sentUs}`);
      if (!side) from = hit.us;
    }
    tail.ack.push(t.ackUs - t.sentUs);
    tail.echo.push(t.echoUs - t.sentUs);
    tail.echoStep.push(t.echoUs - from);
    // Marks of other processes (and unexpected ones of these two) inside the window: who else woke.
    for (const m of within) {
      const k = `${appOf(m)} ${m.point}`;
      other.set(k, (other.get(k) ?? 0) + 1);
    }
    if (missing && shown++ < 3) console.log(`\nhops: a turn with a hop not found: ${line.join(', ')}`);
  }
  console.log(`\n== the echo, hop by hop (µs after the client's send, median over ${turns.length} turns; one clock)`);
  console.log(
    '  hop                                    ends at    step   (step p10–p90)   (side hops: step from the hop named)',
  );
  for (const [name, , , , side] of HOP_STEPS) {
    const e = entry(ends, name);
    if (e.length === 0) continue;
    const st = [...entry(steps, name)].sort((a, b) => a - b);
    const q = (p) => st[Math.min(st.length - 1, Math.floor(p * st.length))];
    console.log(
      `  ${name.padEnd(38)} ${String(median(e)).padStart(6)} ${String(median(st)).padStart(7)}   (${q(0.1)}–${q(0.9)})` +
        (e.length < turns.length ? `  [${e.length} of ${turns.length}]` : '') +
        (side ? `  (side: from ${side.after})` : ''),
    );
  }
  console.log(
    `  ${'client: echo read'.padEnd(38)} ${String(median(tail.echo)).padStart(6)} ${String(median(tail.echoStep)).padStart(7)}`,
  );
  console.log(`  ${'client: ack read'.padEnd(38)} ${String(median(tail.ack)).padStart(6)}`);
  console.log('  marks inside the windows (per turn):');
  for (const [k, n] of [...other.entries()].sort((a, b) => b[1] - a[1]))
    console.log(`    ${(n / turns.length).toFixed(1).padStart(5)}  ${k}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
