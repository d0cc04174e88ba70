'use strict';
// Turn benchmark: Skald's turns through the gateway's WebSocket against a durable floor, in one run.
//
// The stack is the one `npm start` runs (the five apps as separate processes, each with its own
// Postgres role, NATS user and Redis ACL user; libs/testing's Stack) with llm-sim as the model, on
// private Postgres (pg_stat_statements preloaded), NATS and Redis servers, so that every CPU tick
// and SQL statement counted below is the benchmark's own. The floor (scripts/bench/floor/loop.js)
// is a hand-written durable loop on the same Postgres server and the same llm-sim. The topology
// floor (scripts/bench/floor/skeleton/) is ARCHITECTURE.md's fixed topology with trivial handlers:
// bare gateway, worker, approval and runner processes over their own NATS server, doing a Skald
// round's hops and statements — a reference row, judged by no target: what any implementation of
// the architecture pays on this machine.
//
// Workloads: 5 tool rounds of `read_file` (allowed by the default rules) at 0 ms model latency for
// the per-round figures; 3 tool rounds at 200 ms per model call for throughput (ideal: every
// conversation finishes a turn each 4 × 200 ms). A round is one model call with what follows it
// (its tool calls and their writes): a turn of 5 tool rounds has 6 rounds.
//
//   node scripts/bench/turn.js [--quick] [--profile] [--out test-results/bench]
//                              [--fresh 30] [--long 200] [--turns50 4] [--turns200 3] [--parked 200]
//                              [--no-thousand] [--warm-turns 30] [--env NAME=value]… [--workers N]
//                              [--no-skeleton] [--skeleton-only]
//
// `--workers N`: N session-worker processes (default 1), the rest of the stack as it is.
//
// Prints one table and the targets (met / NOT met), writes <out>/turn.json; with --profile also a
// CPU profile of each app under the 50-conversation load (<out>/profiles/<app>.cpuprofile) and a
// summary of where their time went (<out>/profiles/summary.txt).
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const ROOT = path.resolve(__dirname, '../..');
const { Client } = require(path.join(ROOT, 'node_modules/pg'));
const WebSocket = require(path.join(ROOT, 'node_modules/ws'));
const { migrateUp } = require(path.join(ROOT, 'libs/persistence/dist'));
const { ApprovalConfigSchema } = require(path.join(ROOT, 'apps/approval-service/dist/config'));
const { Stack, ApiClient, LlmSimAdminClient, PrivatePostgres, PrivateRedis, PrivateNats } = require(
  path.join(ROOT, 'libs/testing/dist'),
);
const { createSchema: createSkeletonSchema, startSkeleton } = require('./floor/skeleton');
const {
  median,
  quantile,
  judge,
  renderTable,
  renderTargets,
  renderCeilings,
  renderTopologyFloor,
} = require('./turn-report');

// ---------------------------------------------------------------------------------------- options
const argv = process.argv.slice(2);
const flag = (name) => argv.includes(`--${name}`);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const QUICK = flag('quick');
/** `--env NAME=value` (repeatable): set for every app of the stack, e.g. an old pool setting for an A/B. */
const STACK_ENV = Object.fromEntries(
  argv.flatMap((a, i) =>
    a === '--env' && argv[i + 1]?.includes('=') ? [argv[i + 1].split(/=(.*)/s).slice(0, 2)] : [],
  ),
);
const CFG = {
  fresh: Number(opt('fresh', QUICK ? 10 : 30)),
  long: Number(opt('long', QUICK ? 40 : 200)),
  loadTurns: { 50: Number(opt('turns50', QUICK ? 2 : 4)), 200: Number(opt('turns200', QUICK ? 2 : 3)) },
  parked: Number(opt('parked', QUICK ? 30 : 200)),
  // Turns each system runs before it is measured (JIT, pools, first-use caches), the same for both:
  // a worker that has served a while is what a user meets. At 6 turns (36 rounds) V8 was still
  // compiling ~2 ms of the worker's CPU per round in the fresh phase (scripts/bench/worker-perf.js).
  warmTurns: Number(opt('warm-turns', QUICK ? 12 : 30)),
  thousand: !flag('no-thousand') && !QUICK && !flag('skeleton-only'),
  // The topology floor (architecture skeleton): measured unless --no-skeleton; --skeleton-only runs
  // it alone (the stack is started for its llm-sim; Skald and the floor are not measured).
  skeleton: !flag('no-skeleton'),
  skeletonOnly: flag('skeleton-only'),
  // Session-worker processes of the stack (the other apps: one each).
  workers: Number(opt('workers', 1)),
  profile: flag('profile'),
  out: path.resolve(ROOT, opt('out', 'test-results/bench')),
  perRound: { toolRounds: 5, latencyMs: 0 },
  load: { toolRounds: 3, latencyMs: 200 },
  parkAfterSecs: 2,
  users: 50,
};
const PER_ROUND_ROUNDS = CFG.perRound.toolRounds + 1;
const IDEAL_TURN_S = ((CFG.load.toolRounds + 1) * CFG.load.latencyMs) / 1000;
const FILE = 'bench.txt';
const FILE_TEXT = 'A small file the benchmark reads.\n'.repeat(30);

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const loads = [];
/** The machine's 1-minute load after a phase, kept beside its figures. */
function noteLoad(phase) {
  const l = os.loadavg()[0];
  loads.push({ phase, load1: Number(l.toFixed(2)) });
  log(`  (${phase} done; load ${l.toFixed(2)} on ${os.cpus().length} cores)`);
}
const log = (...a) => console.log(...a);

// ------------------------------------------------------------------------------------ /proc CPU
const TICK_MS = 10; // CLK_TCK is 100 on Linux

/** utime+stime (and, for a parent, reaped children's) of a process, in ms; 0 when it is gone. */
function cpuMs(pid, withChildren = false) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    // fields after the name start at 3 (state): utime 14, stime 15, cutime 16, cstime 17
    let t = Number(f[11]) + Number(f[12]);
    if (withChildren) t += Number(f[13]) + Number(f[14]);
    return t * TICK_MS;
  } catch {
    return 0;
  }
}

/** Children of a process (e.g. Postgres backends of the postmaster). */
function childrenOf(ppid) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    try {
      const stat = fs.readFileSync(`/proc/${d}/stat`, 'utf8');
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(f[1]) === ppid) out.push(Number(d));
    } catch {
      /* gone */
    }
  }
  return out;
}

function rssBytes(pid) {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** Anything measured over a phase: `start()`, then `stop()` answers a figure per name. */
/** @typedef {{ start(): unknown, stop(): Record<string, number> }} Meter */

/**
 * A CPU meter over named process groups: `start()` then `stop()` answers ms per group. Postgres is
 * its postmaster (with the time of backends that exited) plus every live backend.
 */
class CpuMeter {
  constructor(groups) {
    this.groups = groups; // { name: () => [{ pid, withChildren }] }
    /** @type {Record<string, number>} */
    this.t0 = {};
  }
  read() {
    /** @type {Record<string, number>} */
    const out = {};
    for (const [name, list] of Object.entries(this.groups))
      out[name] = list().reduce((s, p) => s + cpuMs(p.pid, p.withChildren), 0);
    return out;
  }
  start() {
    this.t0 = this.read();
  }
  stop() {
    const t1 = this.read();
    return Object.fromEntries(Object.keys(t1).map((k) => [k, t1[k] - (this.t0[k] ?? 0)]));
  }
}

// --------------------------------------------------------------------------------- SQL counters
// Postgres 15+ backends report their transaction counts (pg_stat_database) when a transaction ends
// at least a second after their last report, else when idle for PGSTAT_IDLE_INTERVAL (10 s): a
// phase of a few seconds is seen only after that. pg_stat_statements counts at once. So each end of
// a phase waits for the reports to settle, and the transactions of that wait (sweeps, heartbeats —
// single statements, each its own transaction) are taken out by their statement count.
const PGSTAT_SETTLE_MS = 10_500;

class SqlMeter {
  constructor(admin, datname) {
    this.admin = admin;
    this.datname = datname;
    /** Counters at `start()`. */
    this.s0 = { statements: 0, xacts: 0, sessions: 0, idle: 0 };
    /** @type {Map<string, { calls: number, query: string }>} */
    this.b0 = new Map();
  }
  async read() {
    const { rows } = await this.admin.query(
      `SELECT (SELECT COALESCE(sum(calls), 0) FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid
                WHERE d.datname = $1)::bigint AS statements,
              (SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = $1)::bigint AS xacts,
              (SELECT sessions FROM pg_stat_database WHERE datname = $1)::bigint AS sessions`,
      [this.datname],
    );
    return { statements: Number(rows[0].statements), xacts: Number(rows[0].xacts), sessions: Number(rows[0].sessions) };
  }
  /** Counters after every backend has reported; `idle`: the statements run while waiting. */
  async settled() {
    const before = await this.read();
    await sleep(PGSTAT_SETTLE_MS);
    const after = await this.read();
    return { ...after, idle: after.statements - before.statements };
  }
  /** Calls by statement (normalized text), to see what a round spends its statements on. */
  async byStatement() {
    const { rows } = await this.admin.query(
      `SELECT s.queryid::text AS id, s.calls::bigint AS calls, left(regexp_replace(s.query, '\\s+', ' ', 'g'), 160) AS query
         FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = $1`,
      [this.datname],
    );
    return new Map(rows.map((r) => [r.id, { calls: Number(r.calls), query: r.query }]));
  }
  async start() {
    this.s0 = await this.settled();
    this.b0 = await this.byStatement();
  }
  async stop() {
    const b1 = await this.byStatement();
    const s1 = await this.settled();
    const top = [...b1]
      .map(([id, v]) => ({ calls: v.calls - (this.b0.get(id)?.calls ?? 0), query: v.query }))
      .filter((x) => x.calls > 0)
      .sort((a, b) => b.calls - a.calls)
      .slice(0, 30);
    const statements = s1.statements - s1.idle - this.s0.statements;
    // Backends opened (pg_stat_database.sessions) from the start of the phase to its settled end:
    // a pool that closed idle connections opens new ones (a fork, every named statement parsed).
    return { statements, xacts: s1.xacts - s1.idle - this.s0.xacts, top, sessions: s1.sessions - this.s0.sessions };
  }
}

// ------------------------------------------------------------------------------ WebSocket client
/** One conversation: a socket of its own (its own source, hence its own session). */
class Conversation {
  constructor(ws, marker) {
    this.ws = ws;
    this.marker = marker;
    this.sessionId = null;
    this.waiter = null;
    this.turnNo = 0;
    this.arrivals = null; // seq → ms epoch, while recording
    this.echoAt = null;
    this.ackAt = null;
    this.errors = 0;
    this.approvals = 0;
    /** @type {(() => void) | null} Called once on the gateway's hello. */
    this.onHello = null;
    ws.on('message', (data) => this.onFrame(JSON.parse(data.toString('utf8'))));
  }

  static open(gatewayUrl, token, source, marker) {
    const url = new URL('/api/ws', gatewayUrl.replace(/^http/, 'ws'));
    url.searchParams.set('source', source);
    const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
    const conv = new Conversation(ws, marker);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`no hello on ${source}`)), 30_000);
      conv.onHello = () => {
        clearTimeout(timer);
        resolve(conv);
      };
      ws.once('error', reject);
    });
  }

  onFrame(f) {
    const now = Date.now();
    if (f.type === 'hello') {
      this.sessionId = f.session_id;
      this.onHello?.();
      return;
    }
    if (this.arrivals && typeof f.seq === 'number') this.arrivals.push([f.seq, now]);
    if (f.type === 'user_message' && this.echoAt === null) this.echoAt = performance.now();
    if (f.type === 'ack' && this.ackAt === null) this.ackAt = performance.now();
    if (f.type === 'approval_required' || f.type === 'pending_write') {
      this.approvals++;
      this.waiter?.resolve('approval');
    }
    if (f.type === 'error' && f.code !== 'rate_limited') {
      this.errors++;
      this.waiter?.resolve('error');
    }
    if (f.type === 'done') this.waiter?.resolve('done');
  }

  /** Sends the next message; resolves when the turn is done (or errs, or waits for a human). */
  turn(timeoutMs = 120_000) {
    const n = this.turnNo++;
    this.echoAt = null;
    this.ackAt = null;
    const t0 = performance.now();
    return new Promise((resolve) => {
      const timer = setTimeout(() => finish('timeout'), timeoutMs);
      const finish = (how) => {
        clearTimeout(timer);
        this.waiter = null;
        resolve({
          how,
          ms: performance.now() - t0,
          echoMs: this.echoAt === null ? null : this.echoAt - t0,
          ackMs: this.ackAt === null ? null : this.ackAt - t0,
        });
      };
      this.waiter = { resolve: finish };
      this.ws.send(
        JSON.stringify({
          type: 'message',
          client_message_id: randomUUID(),
          content: `read it ${this.marker} #${n}`,
        }),
      );
    });
  }

  close() {
    this.ws.close();
  }
}

// ------------------------------------------------------------------------------------ scripting
/** The model's answers for `turns` turns: `toolRounds` calls of read_file, then a final answer. */
function replies(turns, { toolRounds, latencyMs }) {
  const latency = { firstByteMs: latencyMs };
  const one = [
    ...Array.from({ length: toolRounds }, () => ({
      tool_calls: [{ name: 'read_file', arguments: { path: FILE } }],
      latency,
    })),
    { content: 'Read it.', latency },
  ];
  return Array.from({ length: turns }, () => one).flat();
}

async function scriptConversations(sim, markers, turns, workload) {
  const ids = [];
  for (const m of markers)
    ids.push(await sim.script({ match: m, matchIn: 'last_user', replies: replies(turns, workload) }));
  return ids;
}

async function unscript(sim, ids) {
  for (const id of ids) await sim.unscript(id);
}

const newMarkers = (n, tag) => Array.from({ length: n }, () => `${tag}-${randomUUID().slice(0, 13)}`);

// ------------------------------------------------------------------------------------------ run
async function startInfra(extraSettings = {}) {
  const pg = await PrivatePostgres.start({
    settings: {
      shared_preload_libraries: 'pg_stat_statements',
      'pg_stat_statements.track_utility': 'off',
      'pg_stat_statements.max': '10000',
      ...extraSettings,
    },
  });
  const admin = new Client({ connectionString: pg.url('postgres') });
  try {
    return await prepareInfra(pg, admin);
  } catch (e) {
    await admin.end().catch(() => undefined);
    await pg.destroy();
    throw e;
  }
}

async function prepareInfra(pg, admin) {
  await admin.connect();
  await admin.query('CREATE DATABASE skald');
  await admin.query('CREATE DATABASE floor');
  await admin.query('CREATE DATABASE skeleton');
  await admin.query('CREATE EXTENSION pg_stat_statements');
  const skaldUrl = pg.url('skald');
  await migrateUp(skaldUrl);
  {
    const c = new Client({ connectionString: pg.url('floor') });
    await c.connect();
    await c.query(`CREATE TABLE floor_messages (id bigserial PRIMARY KEY, conversation_id uuid NOT NULL,
                     role text NOT NULL, body jsonb NOT NULL, created_at timestamptz NOT NULL DEFAULT now());
                     CREATE INDEX ON floor_messages (conversation_id, id)`);
    await c.end();
  }
  {
    const c = new Client({ connectionString: pg.url('skeleton') });
    await c.connect();
    await createSkeletonSchema(c);
    await c.end();
  }
  const redis = await PrivateRedis.start();
  // The stack provisions its apps' Redis users on this server (Stack reads REDIS_URL).
  process.env.REDIS_URL = redis.url;
  /** Synchronous last resort on exit: stop the private Postgres (a daemon) and Redis. */
  const stopNow = () => {
    // SIGINT is Postgres's fast shutdown; both answer null once destroyed.
    for (const [pid, signal] of [
      [pg.postmasterPid(), 'SIGINT'],
      [redis.pid, 'SIGKILL'],
    ]) {
      try {
        if (pid) process.kill(pid, signal);
      } catch {
        /* gone */
      }
    }
  };
  return { pg, admin, redis, skaldUrl, stopNow };
}

async function startStack(infra, nodeArgs = {}, extraEnv = {}) {
  // The worker's inspector (loopback, a free port) lets the benchmark collect garbage before it
  // weighs the heap of parked turns.
  nodeArgs = { ...nodeArgs, 'session-worker': [...(nodeArgs['session-worker'] ?? []), '--inspect=127.0.0.1:0'] };
  const stack = await Stack.start({
    root: ROOT,
    env: {
      DATABASE_URL: infra.skaldUrl,
      // npm start's defaults (the test stack's are smaller), and its NODE_ENV (as deployments run).
      DATABASE_POOL_SIZE: '5',
      NODE_ENV: 'production',
      SKALD_RULES_MAX_AGE_MS: String(ApprovalConfigSchema.shape.SKALD_RULES_MAX_AGE_MS.parse(undefined)),
      LOG_LEVEL: 'info',
      // Parked turns are measured without waiting the default 30 s.
      SKALD_PARK_AFTER: String(CFG.parkAfterSecs),
      ...STACK_ENV,
      ...extraEnv,
    },
    nodeArgs,
    replicas: { 'session-worker': CFG.workers },
  });
  try {
    await warmSim(stack.simUrl);
  } catch (e) {
    await stack.stop();
    throw e;
  }
  return stack;
}

// How many chat requests warm llm-sim up before anything is measured. Its per-request CPU keeps
// falling for its first few thousand requests (V8 tiers its once-a-request code up slowly): the
// same captured Skald requests cost it 1.15 ms at first and 0.46 ms after ~6,000
// (scripts/bench/sim-fetch-ab.js). Without this, the system measured first (Skald, after a warm-up of
// 180 requests) paid ~1 ms a round more of llm-sim's CPU than the floor and the skeleton measured
// after thousands (docs/performance.md, "llm-sim warmed up before measuring").
const SIM_WARM_REQUESTS = 4000;

/** A chat request of Skald's shape (system prompt with non-ASCII text, tools, a tool round). */
function simWarmRequest(marker, i) {
  const schema = { type: 'object', properties: { path: { type: 'string', description: 'A path — relative.' } } };
  return {
    model: 'sim-model',
    messages: [
      { role: 'system', content: `You are a warm-up … ${'text '.repeat(200)}` },
      { role: 'user', content: `${marker} read the file ${i}` },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          { id: `call_w${i}`, type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
        ],
      },
      { role: 'tool', tool_call_id: `call_w${i}`, content: FILE_TEXT },
      { role: 'system', content: 'Environment – warm-up.' },
    ],
    tools: Array.from({ length: 8 }, (_, t) => ({
      type: 'function',
      function: { name: t === 0 ? 'read_file' : `tool_${t}`, description: `Tool ${t} — warm-up.`, parameters: schema },
    })),
    stream: true,
    stream_options: { include_usage: true },
  };
}

/** SIM_WARM_REQUESTS streamed requests straight to llm-sim (4 at a time), its request log cleared after. */
async function warmSim(simUrl) {
  const sim = new LlmSimAdminClient(simUrl);
  const [marker] = newMarkers(1, 'simwarm');
  const id = await sim.script({
    match: marker,
    matchIn: 'last_user',
    repeatLast: true,
    replies: [{ tool_calls: [{ name: 'read_file', arguments: { path: FILE } }] }],
  });
  const url = `${simUrl.replace(/\/$/, '')}/chat/completions`;
  let next = 0;
  await Promise.all(
    Array.from({ length: 4 }, async () => {
      while (next < SIM_WARM_REQUESTS) {
        const res = await fetch(url, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: 'Bearer sk-bench' },
          body: JSON.stringify(simWarmRequest(marker, next++)),
        });
        const text = await res.text();
        if (!res.ok || !text.includes('[DONE]'))
          throw new Error(`llm-sim warm-up: HTTP ${res.status} ${text.slice(0, 200)}`);
      }
    }),
  );
  await sim.unscript(id);
  await sim.reset(); // the log: its warm-up bodies are no one's
}

/** Users of the benchmark, each with the file read_file reads in its workspace. */
async function makeUsers(stack, n) {
  const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
  const users = [];
  for (let i = 0; i < n; i++) {
    const u = await admin.createUser(`bench-${i}-${randomUUID().slice(0, 8)}@skald.test`, 'correct horse battery');
    const dir = path.join(stack.env.SKALD_WORKSPACES, u.user.id);
    fs.mkdirSync(dir, { recursive: true, mode: 0o700 });
    fs.writeFileSync(path.join(dir, FILE), FILE_TEXT);
    users.push(u);
  }
  return users;
}

let sourceNo = 0;
async function openConversations(stack, users, markers) {
  const out = [];
  for (let i = 0; i < markers.length; i += 50) {
    const batch = markers.slice(i, i + 50).map((m, j) => {
      const u = users[(i + j) % users.length];
      return Conversation.open(stack.gatewayUrl, u.token, `b${sourceNo++}`, m);
    });
    out.push(...(await Promise.all(batch)));
  }
  return out;
}

function stackGroups(stack, pg) {
  const apps = {};
  for (const p of stack.processes) (apps[p.name] ??= []).push(p);
  const groups = {};
  for (const [name, ps] of Object.entries(apps)) groups[name] = () => ps.map((p) => ({ pid: p.child.pid }));
  groups.nats = () => (stack.nats?.pid ? [{ pid: stack.nats.pid }] : []);
  groups.postgres = () => postgresPids(pg);
  return groups;
}

/** One group per session-worker process (their CPU split; the sum is stackGroups' session-worker). */
function workerGroups(stack) {
  return Object.fromEntries(
    stack.byName('session-worker').map((p, i) => [`session-worker#${i}`, () => [{ pid: p.child.pid }]]),
  );
}

function postgresPids(pg) {
  const pm = pg.postmasterPid();
  return pm ? [{ pid: pm, withChildren: true }, ...childrenOf(pm).map((pid) => ({ pid }))] : [];
}

const sum = (o) => Object.values(o).reduce((a, b) => a + b, 0);
const perRound = (o, rounds) => Object.fromEntries(Object.entries(o).map(([k, v]) => [k, v / rounds]));

/**
 * Sequential turns of fresh conversations: ms per round, echo, CPU and SQL per round.
 * @param {Meter} cpu
 * @param {Meter | null} [workerCpu]
 */
async function skaldFresh(stack, users, sim, cpu, sql, workerCpu = null) {
  const markers = newMarkers(CFG.fresh, 'fresh');
  const ids = await scriptConversations(sim, markers, 1, CFG.perRound);
  const convs = await openConversations(stack, users, markers);
  await sql?.start();
  cpu.start();
  workerCpu?.start();
  const turns = [];
  for (const c of convs) turns.push(await c.turn());
  const cpuMsByApp = cpu.stop();
  const workerMs = workerCpu ? workerCpu.stop() : {};
  const q = sql ? await sql.stop() : null;
  for (const c of convs) c.close();
  await unscript(sim, ids);
  const bad = turns.filter((t) => t.how !== 'done').length;
  if (bad > 0) throw new Error(`${bad} fresh turns did not finish`);
  const rounds = turns.length * PER_ROUND_ROUNDS;
  return {
    msPerRoundFresh: median(turns.map((t) => t.ms / PER_ROUND_ROUNDS)),
    echoMs: median(turns.map((t) => t.echoMs)),
    ackMs: median(turns.map((t) => t.ackMs)),
    echoBeforeAck: turns.filter((t) => t.echoMs !== null && (t.ackMs === null || t.echoMs < t.ackMs)).length,
    echoP99Ms: quantile(
      turns.map((t) => t.echoMs),
      0.99,
    ),
    cpuMsPerRound: sum(cpuMsByApp) / rounds,
    cpuMsPerRoundByProcess: perRound(cpuMsByApp, rounds),
    cpuMsPerRoundByWorker: perRound(workerMs, rounds),
    ...(q && {
      sqlStatementsPerRound: q.statements / rounds,
      sqlTransactionsPerRound: q.xacts / rounds,
      backendsOpened: q.sessions,
      // The statements of the fresh phase by calls per round (normalized text): what a round spends.
      sqlTop: q.top.map((t) => ({ perRound: Math.round((t.calls / rounds) * 100) / 100, query: t.query })),
    }),
  };
}

/** One conversation, many turns: the first 20 turns against the last 20. */
async function skaldLong(stack, users, sim) {
  const [marker] = newMarkers(1, 'long');
  const ids = await scriptConversations(sim, [marker], CFG.long, CFG.perRound);
  const [conv] = await openConversations(stack, users, [marker]);
  const ms = [];
  for (let i = 0; i < CFG.long; i++) {
    const t = await conv.turn();
    if (t.how !== 'done') throw new Error(`turn ${i + 1} of the long conversation: ${t.how}`);
    ms.push(t.ms / PER_ROUND_ROUNDS);
  }
  conv.close();
  await unscript(sim, ids);
  return earlyLate(ms);
}

function earlyLate(msPerRound) {
  const k = Math.min(20, Math.floor(msPerRound.length / 2));
  return { msPerRoundEarly: median(msPerRound.slice(0, k)), msPerRoundLate: median(msPerRound.slice(-k)) };
}

/**
 * N conversations in a closed loop (3 tool rounds at 200 ms), `turnsEach` turns each: turns/s is
 * every turn over the time from the first message to the last answer (ideal: N / 0.8 s).
 * @param {{ events?: boolean, infra?: any, cpu?: Meter | null, workerCpu?: Meter | null,
 *   eventsFrom?: { db: string, table: string, column: string } }} [options]
 */
async function skaldLoad(stack, users, sim, n, options = {}) {
  const {
    events = false,
    infra = null,
    cpu = null,
    workerCpu = null,
    eventsFrom = { db: 'skald', table: 'session_events', column: 'created_at' },
  } = options;
  const markers = newMarkers(n, `load${n}`);
  const turnsEach = CFG.loadTurns[n];
  const ids = await scriptConversations(sim, markers, turnsEach, CFG.load);
  const convs = await openConversations(stack, users, markers);
  let done = 0;
  let errors = 0;
  cpu?.start();
  workerCpu?.start();
  const t0 = performance.now();
  await Promise.all(
    convs.map(async (c) => {
      // Events are timed from the second turn on (the first ones start all at once).
      for (let i = 0; i < turnsEach; i++) {
        if (events && i === 1) c.arrivals = [];
        const t = await c.turn(300_000);
        if (t.how !== 'done') {
          errors++;
          break;
        }
        done++;
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const cpuByProcess = cpu ? cpu.stop() : null;
  const cpuMs = cpuByProcess ? sum(cpuByProcess) : null;
  const workerMs = workerCpu ? workerCpu.stop() : null;
  let eventLatency = null;
  if (events) eventLatency = await eventLatencies(infra, convs, eventsFrom);
  for (const c of convs) c.close();
  await unscript(sim, ids);
  return {
    turnsPerSec: done / seconds,
    ideal: n / IDEAL_TURN_S,
    errors,
    seconds,
    eventLatency,
    ...loadCpu(cpuMs, done, seconds),
    ...(cpuByProcess && done > 0 ? { cpuMsPerTurnByProcess: perRound({ ...cpuByProcess, ...workerMs }, done) } : {}),
  };
}

/** CPU under a throughput phase: ms per finished turn, and how busy it kept the machine's cores. */
function loadCpu(cpuMs, turns, seconds) {
  if (cpuMs == null || turns === 0) return {};
  return { cpuMsPerTurn: cpuMs / turns, busy: cpuMs / (seconds * 1000 * os.cpus().length) };
}

/** Event latency: the client's arrival time against the event row's commit-transaction time. */
async function eventLatencies(infra, convs, from) {
  const c = new Client({ connectionString: infra.pg.url(from.db) });
  await c.connect();
  const lat = [];
  try {
    const { rows } = await c.query(
      `SELECT session_id, seq, (extract(epoch FROM ${from.column}) * 1000)::float8 AS t
         FROM ${from.table} WHERE session_id = ANY($1::uuid[])`,
      [convs.map((x) => x.sessionId)],
    );
    const at = new Map(rows.map((r) => [`${r.session_id}/${r.seq}`, Number(r.t)]));
    for (const conv of convs)
      for (const [seq, arrived] of conv.arrivals ?? []) {
        const t = at.get(`${conv.sessionId}/${seq}`);
        if (t !== undefined) lat.push(arrived - t);
      }
  } finally {
    await c.end();
  }
  return { p50: quantile(lat, 0.5), p99: quantile(lat, 0.99), n: lat.length };
}

/** Memory of parked turns: the worker's heap and RSS before, while waiting, and after parking. */
async function skaldParked(stack, users, sim, infra) {
  // Every worker process's heap (the turns spread over them): their sum.
  const workers = stack.byName('session-worker');
  const memoryAll = async () => {
    const ms = await Promise.all(workers.map((w) => memory(w)));
    return { heap: ms.reduce((a, m) => a + m.heap, 0), rss: ms.reduce((a, m) => a + m.rss, 0) };
  };
  const markers = newMarkers(CFG.parked, 'park');
  const ids = [];
  for (const m of markers)
    ids.push(
      await sim.script({
        match: m,
        matchIn: 'last_user',
        replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: 'true' } }] }],
      }),
    );
  const convs = await openConversations(stack, users, markers);
  const before = await memoryAll();
  const waits = await Promise.all(convs.map((c) => c.turn(60_000)));
  const notWaiting = waits.filter((w) => w.how !== 'approval').length;
  const waiting = await memoryAll();
  const admin = new Client({ connectionString: infra.pg.url('skald') });
  await admin.connect();
  const deadline = Date.now() + 60_000;
  let parked = 0;
  while (Date.now() < deadline) {
    const { rows } = await admin.query(
      `SELECT count(*)::int AS n FROM sessions WHERE id = ANY($1::uuid[]) AND turn_state = 'parked'`,
      [convs.map((c) => c.sessionId)],
    );
    parked = rows[0].n;
    if (parked === convs.length) break;
    await sleep(250);
  }
  await admin.end();
  await sleep(1000);
  const after = await memoryAll();
  for (const c of convs) c.close();
  await unscript(sim, ids);
  return {
    parked,
    notWaiting,
    heapBytesPerWaitingTurn: (waiting.heap - before.heap) / convs.length,
    rssBytesPerWaitingTurn: (waiting.rss - before.rss) / convs.length,
    parkedBytesPerTurn: (after.heap - before.heap) / convs.length,
    parkedRssBytesPerTurn: (after.rss - before.rss) / convs.length,
  };
}

/**
 * The worker's heap in use after a full garbage collection (through its inspector, which the
 * benchmark opens on a loopback port: `--inspect=127.0.0.1:0`), and its RSS.
 */
async function memory(proc) {
  const line = proc.logs.find((l) => l.includes('Debugger listening on ws://'));
  if (!line) throw new Error('the session worker has no inspector');
  const ws = new WebSocket(/(ws:\/\/\S+)/.exec(line)?.[1] ?? '');
  await new Promise((resolve, reject) => {
    ws.once('open', resolve);
    ws.once('error', reject);
  });
  let id = 0;
  const call = (method, params = {}) =>
    new Promise((resolve) => {
      const my = ++id;
      const onMessage = (data) => {
        const msg = JSON.parse(data.toString('utf8'));
        if (msg.id !== my) return;
        ws.off('message', onMessage);
        resolve(msg.result);
      };
      ws.on('message', onMessage);
      ws.send(JSON.stringify({ id: my, method, params }));
    });
  try {
    await call('HeapProfiler.collectGarbage');
    const r = await call('Runtime.evaluate', { expression: 'process.memoryUsage().heapUsed', returnByValue: true });
    return { heap: Number(r.result.value), rss: rssBytes(proc.child.pid) };
  } finally {
    ws.close();
  }
}

/** 1,000 conversations at once, one turn each (3 tool rounds at 200 ms): all must finish. */
async function skaldThousand(stack, users, sim) {
  const n = 1000;
  const markers = newMarkers(n, 'k');
  const ids = await scriptConversations(sim, markers, 1, CFG.load);
  const convs = await openConversations(stack, users, markers);
  const t0 = Date.now();
  const res = await Promise.all(convs.map((c) => c.turn(300_000)));
  const seconds = (Date.now() - t0) / 1000;
  for (const c of convs) c.close();
  await unscript(sim, ids);
  return {
    conversations: n,
    completed: res.filter((r) => r.how === 'done').length,
    errors: res.filter((r) => r.how !== 'done').length,
    seconds,
  };
}

/**
 * Skald's warm-up before anything is measured: JIT, pools, prepared statements, first-use caches.
 * `CFG.warmTurns` turns (as many as the floor's), three to a conversation; nothing of it is counted.
 */
async function warmUp(stack, users, sim) {
  const each = 3;
  const m = newMarkers(Math.max(1, Math.ceil(CFG.warmTurns / each)), 'warm');
  const ids = await scriptConversations(sim, m, each, CFG.perRound);
  const convs = await openConversations(stack, users, m);
  for (const c of convs) for (let i = 0; i < each; i++) await c.turn();
  for (const c of convs) c.close();
  await unscript(sim, ids);
}

// ------------------------------------------------------------------------------------ the floor
async function floorPhase(infra, stack, sim, phase) {
  const workspace = fs.mkdtempSync(path.join(os.tmpdir(), 'skald-floor-'));
  fs.writeFileSync(path.join(workspace, FILE), FILE_TEXT);
  const warmupMarker = newMarkers(1, 'floorwarm')[0];
  const warmIds = await scriptConversations(sim, [warmupMarker], CFG.warmTurns, CFG.perRound);
  const turnsEach = phase.turns;
  const ids = await scriptConversations(sim, phase.markers, turnsEach, phase.workload);
  const child = spawn(
    process.execPath,
    [
      path.join(__dirname, 'floor', 'loop.js'),
      JSON.stringify({
        ...phase,
        databaseUrl: infra.pg.url('floor'),
        simUrl: stack.simUrl,
        workspace,
        warmupMarker,
        warmupTurns: CFG.warmTurns,
      }),
    ],
    { stdio: ['pipe', 'pipe', 'inherit'] },
  );
  const lines = readline.createInterface({ input: child.stdout });
  const next = () =>
    new Promise((resolve, reject) => {
      lines.once('line', resolve);
      child.once('exit', (code) => reject(new Error(`floor exited with ${code}`)));
    });
  if ((await next()) !== 'ready') throw new Error('floor did not start');
  const sim0 = stack.byName('llm-sim')[0].child.pid;
  const cpu = new CpuMeter({
    floor: () => [{ pid: child.pid }],
    'llm-sim': () => [{ pid: sim0 }],
    postgres: () => postgresPids(infra.pg),
  });
  const sql = new SqlMeter(infra.admin, 'floor');
  if (phase.measure) await sql.start();
  cpu.start();
  child.stdin.write('go\n');
  const out = JSON.parse(await next());
  const cpuByProcess = cpu.stop();
  const q = phase.measure ? await sql.stop() : null;
  await unscript(sim, [...ids, ...warmIds]);
  fs.rmSync(workspace, { recursive: true, force: true });
  return { out, cpuByProcess, q };
}

async function floorFigures(infra, stack, sim) {
  const f = {};
  const fresh = await floorPhase(infra, stack, sim, {
    kind: 'sequential',
    markers: newMarkers(CFG.fresh, 'ffresh'),
    turns: 1,
    workload: CFG.perRound,
    measure: true,
  });
  const rounds = fresh.out.turnMs.length * PER_ROUND_ROUNDS;
  f.msPerRoundFresh = median(fresh.out.turnMs.map((ms) => ms / PER_ROUND_ROUNDS));
  f.cpuMsPerRound = sum(fresh.cpuByProcess) / rounds;
  f.cpuMsPerRoundByProcess = perRound(fresh.cpuByProcess, rounds);
  if (!fresh.q) throw new Error("the floor's fresh phase measured no SQL");
  f.sqlStatementsPerRound = fresh.q.statements / rounds;
  f.sqlTransactionsPerRound = fresh.q.xacts / rounds;
  f.backendsOpened = fresh.q.sessions;
  noteLoad('floor fresh');
  const long = await floorPhase(infra, stack, sim, {
    kind: 'sequential',
    markers: newMarkers(1, 'flong'),
    turns: CFG.long,
    workload: CFG.perRound,
  });
  Object.assign(f, earlyLate(long.out.turnMs.map((ms) => ms / PER_ROUND_ROUNDS)));
  noteLoad('floor long conversation');
  for (const n of [50, 200]) {
    const load = await floorPhase(infra, stack, sim, {
      kind: 'throughput',
      markers: newMarkers(n, `fload${n}`),
      turns: CFG.loadTurns[n],
      workload: CFG.load,
      poolSize: 5,
    });
    if (load.out.errors > 0) throw new Error(`the floor failed ${load.out.errors} turns`);
    f[`turnsPerSec${n}`] = load.out.turns / load.out.seconds;
    f[`ideal${n}`] = n / IDEAL_TURN_S;
    const c = loadCpu(sum(load.cpuByProcess), load.out.turns, load.out.seconds);
    f[`cpuMsPerTurn${n}`] = c.cpuMsPerTurn;
    f[`busy${n}`] = c.busy;
    noteLoad(`floor ${n} conversations`);
  }
  return f;
}

// ----------------------------------------------------------------------- the topology floor
/**
 * The architecture skeleton (scripts/bench/floor/skeleton/): the same fresh phase as Skald's (its
 * warm-up first), through its own gateway's WebSocket with the same client and llm-sim scripts;
 * CPU by process (named as Skald's apps, for the side-by-side), SQL per round, echo; then the
 * 50-conversation throughput with event latency and the 200-conversation throughput (no long
 * conversation: a ratio of two of its own times bounds nothing of Skald's — its history handling is
 * not Skald's carry); then the fresh phase again with the worker sending
 * a Skald-size request (13 KB: system prompt and 18 tool schemas) instead of the floor's.
 */
async function skeletonFigures(infra, stack, sim) {
  const workspaces = fs.mkdtempSync(path.join(os.tmpdir(), 'skald-skeleton-'));
  const users = Array.from({ length: CFG.users }, () => {
    const id = randomUUID();
    fs.mkdirSync(path.join(workspaces, id), { mode: 0o700 });
    fs.writeFileSync(path.join(workspaces, id, FILE), FILE_TEXT);
    return { token: id };
  });
  const skel = await startSkeleton({
    databaseUrl: infra.pg.url('skeleton'),
    simUrl: stack.simUrl,
    workspaces,
    requestSize: 'floor',
    PrivateNats,
  });
  const gw = { gatewayUrl: skel.gatewayUrl };
  const sim0 = stack.byName('llm-sim')[0].child.pid;
  const names = { gateway: 'gateway', worker: 'session-worker', approval: 'approval-service', runner: 'tool-runner' };
  const cpu = new CpuMeter({
    ...Object.fromEntries(
      Object.entries(names).map(([role, name]) => [name, () => [{ pid: skel.procs[role].child.pid }]]),
    ),
    nats: () => [{ pid: skel.nats.pid }],
    'llm-sim': () => [{ pid: sim0 }],
    postgres: () => postgresPids(infra.pg),
  });
  const s = {};
  try {
    await warmUp(gw, users, sim);
    Object.assign(s, await skaldFresh(gw, users, sim, cpu, new SqlMeter(infra.admin, 'skeleton')));
    noteLoad('skeleton fresh');
    if (!QUICK || CFG.skeletonOnly) {
      const r = await skaldLoad(gw, users, sim, 50, {
        events: true,
        infra,
        cpu,
        eventsFrom: { db: 'skeleton', table: 'skel_events', column: 'created_at' },
      });
      if (r.errors > 0) throw new Error(`the skeleton failed ${r.errors} turns at 50 conversations`);
      if (!r.eventLatency) throw new Error('the skeleton at 50 conversations timed no events');
      Object.assign(s, {
        turnsPerSec50: r.turnsPerSec,
        ideal50: r.ideal,
        cpuMsPerTurn50: r.cpuMsPerTurn,
        busy50: r.busy,
        eventP50Ms: r.eventLatency.p50,
        eventP99Ms: r.eventLatency.p99,
      });
      noteLoad('skeleton 50 conversations');
      const r200 = await skaldLoad(gw, users, sim, 200, { cpu });
      if (r200.errors > 0) throw new Error(`the skeleton failed ${r200.errors} turns at 200 conversations`);
      Object.assign(s, {
        turnsPerSec200: r200.turnsPerSec,
        ideal200: r200.ideal,
        cpuMsPerTurn200: r200.cpuMsPerTurn,
        busy200: r200.busy,
      });
      noteLoad('skeleton 200 conversations');
    }
    await skel.setRequestSize('skald');
    await warmUp(gw, users, sim);
    s.skaldSize = await skaldFresh(gw, users, sim, cpu, null);
    noteLoad('skeleton fresh, Skald-size request');
  } finally {
    await skel.stop();
    fs.rmSync(workspaces, { recursive: true, force: true });
  }
  return s;
}

// ------------------------------------------------------------------------------------- profiles
/** Now on the clock a .cpuprofile's timestamps use (CLOCK_MONOTONIC, microseconds). */
const monoUs = () => Number(process.hrtime.bigint() / 1000n);

/**
 * Self time by function of a .cpuprofile, counting only the samples taken within `window`
 * (monotonic µs: the load, not the app's start-up): the busy ms and the top `n` as lines.
 */
function topFunctions(file, window, n = 15) {
  const prof = JSON.parse(fs.readFileSync(file, 'utf8'));
  const self = new Map();
  const byId = new Map(prof.nodes.map((x) => [x.id, x]));
  const dt = new Map();
  let at = prof.startTime;
  for (let i = 0; i < prof.samples.length; i++) {
    at += prof.timeDeltas[i] ?? 0;
    if (at < window.from || at > window.to) continue;
    dt.set(prof.samples[i], (dt.get(prof.samples[i]) ?? 0) + (prof.timeDeltas[i] ?? 0));
  }
  let total = 0;
  for (const [id, us] of dt) {
    const node = byId.get(id);
    const cf = node.callFrame;
    const key = `${cf.functionName || '(anonymous)'} ${cf.url.replace(/^file:\/\//, '').replace(ROOT + '/', '')}:${cf.lineNumber + 1}`;
    self.set(key, (self.get(key) ?? 0) + us);
    if (cf.functionName !== '(idle)') total += us;
  }
  const lines = [...self.entries()]
    .filter(([k]) => !k.startsWith('(idle)'))
    .sort((a, b) => b[1] - a[1])
    .slice(0, n)
    .map(([k, us]) => `${((100 * us) / total).toFixed(1).padStart(5)} %  ${k}`);
  return { busyMs: total / 1000, lines };
}

async function profileRun(infra) {
  const dir = path.join(CFG.out, 'profiles');
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  const apps = ['gateway', 'session-worker', 'approval-service', 'tool-runner', 'scheduler', 'llm-sim'];
  const nodeArgs = Object.fromEntries(
    apps.map((a) => [a, ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${a}.cpuprofile`]]),
  );
  // More than one worker process: each writes its own (Node's default name, with its pid) under session-worker/.
  if (CFG.workers > 1)
    nodeArgs['session-worker'] = ['--cpu-prof', `--cpu-prof-dir=${path.join(dir, 'session-worker')}`];
  const stack = await startStack(infra, nodeArgs);
  let r;
  const window = { from: 0, to: 0 };
  try {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await makeUsers(stack, CFG.users);
    window.from = monoUs();
    r = await skaldLoad(stack, users, sim, 50);
    window.to = monoUs();
  } finally {
    await stack.stop();
  }
  const secs = (window.to - window.from) / 1e6;
  const summary = [
    `turns/s at 50 conversations under profiling: ${r.turnsPerSec.toFixed(1)} (of ${r.ideal}); ` +
      `only the samples of that load (${secs.toFixed(1)} s) are counted below, not the apps' start-up`,
  ];
  const workerDir = path.join(dir, 'session-worker');
  const files = apps.flatMap((a) =>
    a === 'session-worker' && fs.existsSync(workerDir)
      ? fs.readdirSync(workerDir).map((f, i) => [`${a}#${i}`, path.join(workerDir, f)])
      : [[a, path.join(dir, `${a}.cpuprofile`)]],
  );
  for (const [a, f] of files) {
    if (!fs.existsSync(f)) continue;
    const top = topFunctions(f, window);
    summary.push(
      '',
      `== ${a}: busy ${top.busyMs.toFixed(0)} ms of ${(secs * 1000).toFixed(0)} (self time, share of busy time)`,
      ...top.lines,
    );
  }
  fs.writeFileSync(path.join(dir, 'summary.txt'), summary.join('\n') + '\n');
  log(`\nCPU profiles: ${path.relative(ROOT, dir)}/*.cpuprofile; summary: ${path.relative(ROOT, dir)}/summary.txt`);
}

// ----------------------------------------------------------------------------------------- main
async function main() {
  const t0 = Date.now();
  fs.mkdirSync(CFG.out, { recursive: true });
  log(
    `turn benchmark (${QUICK ? 'quick' : 'full'} run, ${CFG.workers} session-worker process${CFG.workers > 1 ? 'es' : ''}); load ${os.loadavg()[0].toFixed(2)} on ${os.cpus().length} cores`,
  );
  const infra = await startInfra();
  let stack = null;
  const skald = {};
  let floor = {};
  let skeleton = null;
  const extra = {};
  // The private servers go whatever happens (they are daemons: a failed run would leave them).
  process.once('exit', () => infra.stopNow());
  try {
    stack = await startStack(infra);
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await makeUsers(stack, CFG.users);
    const cpu = new CpuMeter({ ...stackGroups(stack, infra.pg), redis: () => [{ pid: infra.redis.pid }] });
    const sql = new SqlMeter(infra.admin, 'skald');
    const workerCpu = CFG.workers > 1 ? new CpuMeter(workerGroups(stack)) : null;
    if (!CFG.skeletonOnly) {
      await warmUp(stack, users, sim);
      log('fresh conversations…');
      Object.assign(skald, await skaldFresh(stack, users, sim, cpu, sql, workerCpu));
      noteLoad('Skald fresh');
      log(`one conversation of ${CFG.long} turns…`);
      Object.assign(skald, await skaldLong(stack, users, sim));
      noteLoad('Skald long conversation');
      for (const n of [50, 200]) {
        log(`${n} conversations, ${CFG.loadTurns[n]} turns each…`);
        const r = await skaldLoad(stack, users, sim, n, { events: n === 50, infra, cpu, workerCpu });
        skald[`turnsPerSec${n}`] = r.turnsPerSec;
        skald[`ideal${n}`] = r.ideal;
        skald[`cpuMsPerTurn${n}`] = r.cpuMsPerTurn;
        skald[`busy${n}`] = r.busy;
        skald[`cpuMsPerTurnByProcess${n}`] = r.cpuMsPerTurnByProcess;
        extra[`load${n}`] = { errors: r.errors, seconds: r.seconds };
        if (r.eventLatency) {
          skald.eventP50Ms = r.eventLatency.p50;
          skald.eventP99Ms = r.eventLatency.p99;
          extra.eventsMeasured = r.eventLatency.n;
        }
        noteLoad(`Skald ${n} conversations`);
      }
      log(`${CFG.parked} turns waiting for a human, then parked…`);
      const parked = await skaldParked(stack, users, sim, infra);
      skald.parkedBytesPerTurn = parked.parkedBytesPerTurn;
      extra.parked = parked;
      noteLoad('Skald parked turns');
      if (CFG.thousand) {
        log('1,000 conversations at once…');
        skald.thousand = await skaldThousand(stack, users, sim);
        noteLoad('Skald 1,000 conversations');
      }
      log('the floor…');
      floor = await floorFigures(infra, stack, sim);
    }
    if (CFG.skeleton || CFG.skeletonOnly) {
      log('the topology floor (architecture skeleton)…');
      skeleton = await skeletonFigures(infra, stack, sim);
    }
  } finally {
    if (stack) await stack.stop().catch((e) => log(`stack stop: ${e.message}`));
  }
  try {
    if (CFG.profile) await profileRun(infra);
  } finally {
    await infra.admin.end().catch(() => undefined);
    await infra.pg.destroy();
    await infra.redis.destroy();
  }

  const results = judge(skald, floor);
  const references = skeleton
    ? [
        ["topology floor: ARCHITECTURE.md's processes and hops, trivial handlers (skeleton)", skeleton],
        ['the same skeleton, Skald-size model request', skeleton.skaldSize],
      ]
    : [];
  const table = renderTable(skald, floor, references);
  log('\n' + table + '\n');
  log(renderTargets(results));
  log('\n' + renderCeilings(skald, floor, os.cpus().length));
  if (skeleton) log('\n' + renderTopologyFloor(skald, floor, skeleton));
  log(
    `\nCPU ms per round by process — Skald: ${fmtBy(skald.cpuMsPerRoundByProcess)}; floor: ${fmtBy(floor.cpuMsPerRoundByProcess)}`,
  );
  if (skeleton)
    log(
      `CPU ms per round by process — skeleton: ${fmtBy(skeleton.cpuMsPerRoundByProcess)}; ` +
        `skeleton with a Skald-size request: ${fmtBy(skeleton.skaldSize?.cpuMsPerRoundByProcess)}`,
    );
  if (CFG.workers > 1) log(`CPU ms per round by session-worker process (fresh): ${fmtBy(skald.cpuMsPerRoundByWorker)}`);
  for (const n of [50, 200])
    if (skald[`cpuMsPerTurnByProcess${n}`])
      log(`CPU ms per turn by process at ${n} conversations: ${fmtBy(skald[`cpuMsPerTurnByProcess${n}`])}`);
  log(
    `Postgres backends opened during the fresh phase (with its settling wait) — Skald: ${skald.backendsOpened ?? '–'}; floor: ${floor.backendsOpened ?? '–'}` +
      (skeleton ? `; skeleton: ${skeleton.backendsOpened ?? '–'}` : ''),
  );
  log(`machine load (1 min) after each phase: ${loads.map((l) => `${l.phase} ${l.load1}`).join('; ')}`);
  log(`whole run: ${((Date.now() - t0) / 1000).toFixed(0)} s`);
  const out = path.join(CFG.out, 'turn.json');
  fs.writeFileSync(
    out,
    JSON.stringify(
      {
        at: new Date().toISOString(),
        machine: { cores: os.cpus().length, loadAfterEachPhase: loads },
        config: CFG,
        skald,
        floor,
        skeleton,
        extra,
        targets: results,
        table,
      },
      null,
      2,
    ) + '\n',
  );
  log(`written: ${path.relative(ROOT, out)}`);
}

function fmtBy(o) {
  return o
    ? Object.entries(o)
        .filter(([, v]) => v > 0)
        .sort((a, b) => b[1] - a[1])
        .map(([k, v]) => `${k} ${v.toFixed(2)}`)
        .join(', ')
    : '–';
}

// The stack's set-up and one turn's driving, for the other benchmarks of the stack (syscalls.js).
module.exports = {
  CFG,
  PER_ROUND_ROUNDS,
  startInfra,
  startStack,
  makeUsers,
  warmUp,
  newMarkers,
  scriptConversations,
  openConversations,
  unscript,
  stackGroups,
  postgresPids,
  cpuMs,
  CpuMeter,
  skaldFresh,
  skaldLoad,
  skaldLong,
  FILE,
  FILE_TEXT,
};

if (require.main === module)
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
