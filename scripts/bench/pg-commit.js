#!/usr/bin/env node
'use strict';
// Postgres CPU per tool round of the session worker's two round commits, in isolation: the
// one-statement commit (apps/session-worker/dist/loop-adapters/session-store/one-statement-commit.js) sent by name over
// one connection, as the worker sends it, with the turn benchmark's round (the answer: an
// assistant message, its `read_file` call `pending`, the usage row and `tool_start`; then the
// result: the call `done` with a 1.35 kB result and `tool_done`). The backend's CPU is read from
// /proc/<pid>/stat (the server must run on this machine), so it counts parse, bind, planning,
// execution, triggers, WAL and the commit — everything Postgres does for the round.
//
// Variants run alternately in batches on fresh databases (same prefill), so a machine's load
// drifts over both alike:
//   --variant name[:setting=value,…][:sql=file][:module=file]   (repeatable; default: `main`)
//   setting: run on the connection (`SET`), e.g. plan_cache_mode=force_generic_plan
//   sql:     run on the variant's database after the migrations (a schema change)
//   module:  the commit module of another build (its compiled one-statement-commit.js, e.g. a copy
//            of main's taken before building a branch): one exporting `oneStatementCommit` (a
//            statement per commit shape) or, older, `ONE_STATEMENT_COMMIT_SQL`/`oneStatementParams`
//
//   node scripts/bench/pg-commit.js [--rounds 500] [--batches 6] [--prefill 2000] [--variant …]…
//
// DATABASE_URL names the server (default: the local one); each variant gets a database of its own
// (`skald_pgcommit_<name>`), dropped at the end.
const fs = require('node:fs');
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const { Client } = require(path.join(ROOT, 'node_modules/pg'));
const { freshDatabase } = require('./bench-db');
const commit = require(path.join(ROOT, 'apps/session-worker/dist/loop-adapters/session-store/one-statement-commit'));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const opts = (name) => argv.flatMap((a, i) => (a === `--${name}` && argv[i + 1] !== undefined ? [argv[i + 1]] : []));
const ROUNDS = Number(opt('rounds', 500));
const BATCHES = Number(opt('batches', 6));
const PREFILL = Number(opt('prefill', 2000));
const TICK_MS = 10;

function parseVariant(spec) {
  const [name, ...parts] = spec.split(':');
  const v = { name, settings: {}, sql: /** @type {string[]} */ ([]), module: commit };
  for (const p of parts) {
    if (p.startsWith('sql=')) v.sql.push(p.slice(4));
    else if (p.startsWith('module=')) v.module = require(path.resolve(p.slice(7)));
    else
      for (const kv of p.split(',')) {
        const i = kv.indexOf('=');
        v.settings[kv.slice(0, i)] = kv.slice(i + 1);
      }
  }
  return v;
}
const VARIANTS = (opts('variant').length > 0 ? opts('variant') : ['main']).map(parseVariant);

function cpuMs(pid) {
  const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[11]) + Number(f[12])) * TICK_MS;
}

const RESULT = 'A small file the benchmark reads.\n'.repeat(40).slice(0, 1350);

/** A session with its lease and root frame, as the worker's turn has them. */
async function newSession(c, owner) {
  const s = { id: randomUUID(), userId: randomUUID(), frameId: randomUUID() };
  await c.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, $3)`, [s.id, s.userId, `b-${s.id}`]);
  await c.query(
    `INSERT INTO session_leases (session_id, owner, epoch, expires_at) VALUES ($1, $2, 1, now() + interval '1 day')`,
    [s.id, owner],
  );
  await c.query(
    `INSERT INTO stack_frames (id, session_id, agent_id, depth, status, epoch) VALUES ($1, $2, 'default', 0, 'active', 1)`,
    [s.frameId, s.id],
  );
  return s;
}

/** The two commits of one `read_file` round: [mutations, events, usage] each. */
function round(s) {
  const messageId = randomUUID();
  const callId = randomUUID();
  const answer = [
    [
      {
        kind: 'appendMessage',
        message: {
          id: messageId,
          sessionId: s.id,
          frameId: s.frameId,
          role: 'assistant',
          content: '',
          reasoningContent: null,
          isSynthetic: false,
          attachments: null,
          clientMessageId: null,
          inputTokens: 3400,
          outputTokens: 20,
          createdAt: new Date().toISOString(),
          costUsd: 0.0012,
          tokensEstimated: false,
          llmClient: 'sim',
          llmModel: 'sim-model',
        },
      },
      {
        kind: 'createToolCall',
        call: {
          id: callId,
          sessionId: s.id,
          frameId: s.frameId,
          messageId,
          index: 0,
          llmCallId: `call_${callId.slice(0, 8)}`,
          name: 'read_file',
          argumentsText: '{"path":"bench.txt"}',
          status: 'pending',
          result: null,
          resultType: null,
          requestId: null,
          childFrameId: null,
        },
      },
    ],
    [
      {
        type: 'tool_start',
        tool_call_id: callId,
        message_id: messageId,
        name: 'read_file',
        arguments: { path: 'bench.txt' },
        label_short: 'Read bench.txt',
        label_full: 'read_file {"path":"bench.txt"}',
        path: 'bench.txt',
      },
    ],
    [
      {
        userId: s.userId,
        sessionId: s.id,
        frameId: s.frameId,
        messageId,
        purpose: 'round',
        client: 'sim',
        model: 'sim-model',
        inputTokens: 3400,
        outputTokens: 20,
        cachedInputTokens: 0,
        estimated: false,
        costUsd: 0.0012,
      },
    ],
  ];
  const result = [
    [{ kind: 'updateToolCall', id: callId, patch: { status: 'done', result: RESULT, resultType: 'text' } }],
    [{ type: 'tool_done', tool_call_id: callId, result: RESULT, result_type: 'text' }],
    [],
  ];
  return [answer, result];
}

/** The commit as the module's store sends it: { name, text, values }. */
function statement(mod, sessionId, fence, mutations, events, usage) {
  if (mod.oneStatementCommit) return mod.oneStatementCommit(sessionId, fence, mutations, events, usage);
  const values = mod.oneStatementParams(sessionId, fence, mutations, events, usage);
  return { name: mod.ONE_STATEMENT_COMMIT_NAME, text: mod.ONE_STATEMENT_COMMIT_SQL, values };
}

async function runRounds(v, n) {
  const c = v.client;
  const sessions = [];
  for (let i = 0; i < Math.max(1, Math.ceil(n / 6)); i++) sessions.push(await newSession(c, v.owner));
  const t0 = cpuMs(v.pid);
  const w0 = performance.now();
  for (let i = 0; i < n; i++) {
    const s = sessions[Math.floor(i / 6)];
    for (const [mutations, events, usage] of round(s)) {
      const { rows } = await c.query(statement(v.module, s.id, { owner: v.owner, epoch: 1 }, mutations, events, usage));
      if (!rows[0].ok) throw new Error(`${v.name}: commit refused`);
    }
  }
  return { cpuMs: cpuMs(v.pid) - t0, wallMs: performance.now() - w0 };
}

async function prefill(c, owner, n) {
  // Other sessions' rounds, so that tables and indexes have the size of a running system.
  const v = { client: c, owner, pid: null, module: commit };
  v.pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
  await runRounds(v, n);
  await c.query('ANALYZE');
}

async function main() {
  const out = {};
  for (const v of VARIANTS) {
    v.db = `skald_pgcommit_${v.name.replace(/[^a-z0-9_]/gi, '_').toLowerCase()}`;
    v.url = await freshDatabase(v.db);
    v.owner = `bench-${randomUUID()}`;
    const c = new Client({ connectionString: v.url, application_name: `pg-commit-${v.name}` });
    await c.connect();
    for (const f of v.sql) await c.query(fs.readFileSync(path.resolve(f), 'utf8'));
    await prefill(c, v.owner, PREFILL);
    for (const [k, val] of Object.entries(v.settings)) await c.query(`SET ${k} = '${val.replace(/'/g, "''")}'`);
    v.client = c;
    v.pid = (await c.query('SELECT pg_backend_pid() AS pid')).rows[0].pid;
    await runRounds(v, 30); // warm: the statement prepared, five custom plans, caches
    out[v.name] = { cpuMs: [], wallMs: [] };
  }
  for (let b = 0; b < BATCHES; b++) {
    for (const v of b % 2 === 0 ? VARIANTS : [...VARIANTS].reverse()) {
      const r = await runRounds(v, ROUNDS);
      out[v.name].cpuMs.push(r.cpuMs / ROUNDS);
      out[v.name].wallMs.push(r.wallMs / ROUNDS);
    }
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  console.log(
    `Postgres backend CPU ms per round (2 commits), ${BATCHES} batches × ${ROUNDS} rounds, prefill ${PREFILL} rounds, load ${require('node:os')
      .loadavg()[0]
      .toFixed(1)}:`,
  );
  for (const v of VARIANTS) {
    const r = out[v.name];
    console.log(
      `  ${v.name.padEnd(16)} median ${med(r.cpuMs).toFixed(3)}  [${r.cpuMs.map((x) => x.toFixed(3)).join(' ')}]  wall ${med(
        r.wallMs,
      ).toFixed(3)} ms/round`,
    );
  }
  for (const v of VARIANTS) {
    const plans = await v.client.query(
      `SELECT name, generic_plans, custom_plans FROM pg_prepared_statements WHERE name LIKE 'skald_commit%' ORDER BY name`,
    );
    console.log(
      `  ${v.name}: ${plans.rows.map((r) => `${r.name} ${r.generic_plans} generic, ${r.custom_plans} custom`).join('; ')}`,
    );
    await v.client.end();
  }
  const admin = new Client({ connectionString: new URL('/postgres', VARIANTS[0].url).toString() });
  await admin.connect();
  for (const v of VARIANTS) await admin.query(`DROP DATABASE IF EXISTS ${v.db} WITH (FORCE)`);
  await admin.end();
}

module.exports = { newSession, round, runRounds, prefill };

if (require.main === module)
  main().then(
    () => process.exit(0),
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
