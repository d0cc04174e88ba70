#!/usr/bin/env node
'use strict';
// What Postgres spends per tool round, by statement and by service (the turn benchmark's stack and
// workload: fresh conversations, one turn of 5 `read_file` rounds each, one after the other).
//
// A private Postgres (pg_stat_statements, `log_connections`) under the stack; for each measured
// phase: Postgres CPU per round from /proc (the postmaster with its reaped children plus every live
// backend) and by service (live backends by role), per statement (pg_stat_statements) calls, plans,
// plan and execution ms, buffers and WAL bytes per round, pg_stat_wal per round, and the backends
// opened during the phase by role (from the server log: `connection authorized`).
//
// Phases: `--phases N` runs of `--turns T` fresh turns, with `--gap S` idle seconds before each
// (the turn benchmark waits 10.5 s before its fresh phase, while its SQL counters settle).
//
//   node scripts/bench/pg-round.js [--turns 20] [--phases 2] [--gap 12] [--planning]
//        [--db-setting name=value]… [--env NAME=value]… [--setting name=value]… [--keep-log file]
//        [--sql file]… [--label x] [--out test-results/bench]
//
// `--planning` turns on pg_stat_statements.track_planning (plan ms per statement; it costs a
// little CPU itself, so compare CPU between runs made with the same flag). `--db-setting` is
// `ALTER DATABASE skald SET …` before the stack connects (e.g. plan_cache_mode=force_generic_plan);
// `--env` goes to every app of the stack; `--setting` is a server setting (`-c`), e.g.
// shared_preload_libraries=pg_stat_statements,auto_explain with auto_explain.* to log plans, and
// `--keep-log` copies the server log out before the private cluster is removed; `--sql` runs a
// file on the migrated database before the stack starts (a schema experiment: an index dropped…).
const fs = require('node:fs');
const path = require('node:path');
const bench = require('./turn');

const ROOT = path.resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const opts = (name) => argv.flatMap((a, i) => (a === `--${name}` && argv[i + 1] !== undefined ? [argv[i + 1]] : []));
const pairs = (list) =>
  Object.fromEntries(
    list.map((kv) => {
      const i = kv.indexOf('=');
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  );
const TURNS = Number(opt('turns', 20));
const PHASES = Number(opt('phases', 2));
const GAP_S = Number(opt('gap', 12));
const PLANNING = argv.includes('--planning');
const DB_SETTINGS = pairs(opts('db-setting'));
const ENV = pairs(opts('env'));
const SETTINGS = pairs(opts('setting'));
const KEEP_LOG = opt('keep-log', null);
const SQL_FILES = opts('sql');
const LABEL = opt('label', 'run');
const OUT = path.resolve(ROOT, opt('out', 'test-results/bench'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** A short name for a statement of the stack, from its text (pg_stat_statements' normalized form). */
function statementName(q) {
  const t = q.replace(/\s+/g, ' ');
  /** @type {Array<[RegExp, string]>} */
  const known = [
    [/^WITH fence AS .* go AS \(/i, 'commit (one statement)'],
    [/submit|session_inbox.*lease|ins AS \(INSERT INTO session_inbox/i, 'submit'],
    [/turn_start|SESSION_HAS_WORK|json_agg/i, 'start read'],
  ];
  for (const [re, name] of known) if (re.test(t)) return name;
  return t.slice(0, 90);
}

async function snapshot(admin, datname, logFile) {
  const pgss = await admin.query(
    `SELECT s.queryid::text AS id, r.rolname AS role, s.query,
            s.calls::float8, s.plans::float8, s.total_plan_time, s.total_exec_time, s.rows::float8,
            s.shared_blks_hit::float8 AS hit, s.shared_blks_read::float8 AS read,
            s.shared_blks_dirtied::float8 AS dirtied, s.shared_blks_written::float8 AS written,
            s.wal_records::float8, s.wal_fpi::float8, s.wal_bytes::float8
       FROM pg_stat_statements s JOIN pg_database d ON d.oid = s.dbid JOIN pg_roles r ON r.oid = s.userid
      WHERE d.datname = $1`,
    [datname],
  );
  const wal = (await admin.query(`SELECT wal_records::float8, wal_fpi::float8, wal_bytes::float8 FROM pg_stat_wal`))
    .rows[0];
  const db = (
    await admin.query(`SELECT sessions::float8, xact_commit::float8 FROM pg_stat_database WHERE datname = $1`, [
      datname,
    ])
  ).rows[0];
  const backends = (
    await admin.query(`SELECT pid, usename FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`, [
      datname,
    ])
  ).rows;
  const logSize = fs.existsSync(logFile) ? fs.statSync(logFile).size : 0;
  return { pgss: new Map(pgss.rows.map((r) => [`${r.id}/${r.role}`, r])), wal, db, backends, logSize };
}

/** CPU ns a process has run (/proc/<pid>/schedstat: ns resolution, not the 10 ms of stat's ticks); null when gone. */
function runNs(pid) {
  try {
    return Number(fs.readFileSync(`/proc/${pid}/schedstat`, 'utf8').split(' ')[0]);
  } catch {
    return null;
  }
}

function cpuByRole(backends) {
  const out = {};
  for (const b of backends) out[b.pid] = { role: b.usename, ms: (runNs(b.pid) ?? 0) / 1e6 };
  return out;
}

/**
 * Postgres CPU ms between two readings: every backend of the server that lives at the end (its
 * schedstat, less what it had at the start), plus the postmaster's own time and the ticks of the
 * children it reaped meanwhile (backends that ended: 10 ms resolution).
 */
function postgresReading(pg) {
  const pm = pg.postmasterPid();
  const backends = {};
  for (const p of bench.postgresPids(pg)) if (p.pid !== pm) backends[p.pid] = (runNs(p.pid) ?? 0) / 1e6;
  return { pm: bench.cpuMs(pm, true), backends };
}
function postgresMs(r0, r1) {
  let ms = r1.pm - r0.pm;
  for (const [pid, v] of Object.entries(r1.backends)) ms += v - (r0.backends[pid] ?? 0);
  return ms;
}

/** `connection authorized: user=… database=…` lines written to the server log since `from`. */
function connectionsSince(logFile, from) {
  const fd = fs.openSync(logFile, 'r');
  const size = fs.fstatSync(fd).size;
  const buf = Buffer.alloc(size - from);
  fs.readSync(fd, buf, 0, buf.length, from);
  fs.closeSync(fd);
  const by = {};
  for (const m of buf.toString('utf8').matchAll(/connection authorized: user=(\S+)/g)) by[m[1]] = (by[m[1]] ?? 0) + 1;
  return by;
}

async function phase(ctx, n) {
  const { admin, datname, logFile, stack, users, sim, pg } = ctx;
  const markers = bench.newMarkers(TURNS, `pgr${n}`);
  const ids = await bench.scriptConversations(sim, markers, 1, bench.CFG.perRound);
  const convs = await bench.openConversations(stack, users, markers);
  if (GAP_S > 0) await sleep(GAP_S * 1000);
  const s0 = await snapshot(admin, datname, logFile);
  const pgCpu0 = bench
    .postgresPids(pg)
    .reduce((s, p) => s + bench.cpuMs(p.pid, 'withChildren' in p && p.withChildren), 0);
  const pgRead0 = postgresReading(pg);
  const live0 = cpuByRole(s0.backends);
  for (const c of convs) {
    const t = await c.turn();
    if (t.how !== 'done') throw new Error(`turn: ${t.how}`);
  }
  const pgCpu1 = bench
    .postgresPids(pg)
    .reduce((s, p) => s + bench.cpuMs(p.pid, 'withChildren' in p && p.withChildren), 0);
  const pgRead1 = postgresReading(pg);
  const s1 = await snapshot(admin, datname, logFile);
  const live1 = cpuByRole(s1.backends);
  for (const c of convs) c.close();
  await bench.unscript(sim, ids);
  const rounds = TURNS * bench.PER_ROUND_ROUNDS;
  const byRole = {};
  for (const [pid, v] of Object.entries(live1)) {
    const before = live0[pid]?.ms ?? 0;
    const role = v.role.replace(/^skald_/, '');
    byRole[role] = (byRole[role] ?? 0) + (v.ms - before) / rounds;
  }
  const statements = [];
  for (const [key, r] of s1.pgss) {
    const b = s0.pgss.get(key);
    const d = (f) => r[f] - (b?.[f] ?? 0);
    const calls = d('calls');
    if (calls <= 0) continue;
    statements.push({
      name: statementName(r.query),
      role: r.role.replace(/^skald_/, ''),
      perRound: calls / rounds,
      plansPerCall: d('plans') / calls,
      planUs: (d('total_plan_time') * 1000) / calls,
      execUs: (d('total_exec_time') * 1000) / calls,
      planUsPerRound: (d('total_plan_time') * 1000) / rounds,
      execUsPerRound: (d('total_exec_time') * 1000) / rounds,
      rowsPerCall: d('rows') / calls,
      buffersPerCall: (d('hit') + d('read')) / calls,
      dirtiedPerCall: d('dirtied') / calls,
      walRecordsPerCall: d('wal_records') / calls,
      walBytesPerCall: d('wal_bytes') / calls,
      walFpiPerCall: d('wal_fpi') / calls,
      query: r.query.replace(/\s+/g, ' ').slice(0, 400),
    });
  }
  statements.sort((a, b) => b.planUsPerRound + b.execUsPerRound - (a.planUsPerRound + a.execUsPerRound));
  return {
    rounds,
    postgresCpuMsPerRound: (pgCpu1 - pgCpu0) / rounds,
    postgresSchedMsPerRound: postgresMs(pgRead0, pgRead1) / rounds,
    liveBackendCpuMsPerRoundByRole: byRole,
    connectionsOpened: connectionsSince(logFile, s0.logSize),
    sessionsOpened: s1.db.sessions - s0.db.sessions,
    walBytesPerRound: (s1.wal.wal_bytes - s0.wal.wal_bytes) / rounds,
    walRecordsPerRound: (s1.wal.wal_records - s0.wal.wal_records) / rounds,
    walFpiPerRound: (s1.wal.wal_fpi - s0.wal.wal_fpi) / rounds,
    statements,
  };
}

function print(p, n) {
  const f = (x, d = 2) => x.toFixed(d);
  console.log(
    `phase ${n}: Postgres CPU ${f(p.postgresCpuMsPerRound)} ms/round (ticks), ${f(p.postgresSchedMsPerRound, 3)} (schedstat); live backends by role: ${Object.entries(
      p.liveBackendCpuMsPerRoundByRole,
    )
      .sort((a, b) => b[1] - a[1])
      .map(([k, v]) => `${k} ${f(v)}`)
      .join(', ')}`,
  );
  console.log(
    `  backends opened: ${p.sessionsOpened} (${Object.entries(p.connectionsOpened)
      .map(([k, v]) => `${k.replace(/^skald_/, '')} ${v}`)
      .join(', ')}); WAL ${f(p.walBytesPerRound, 0)} B/round (${f(p.walRecordsPerRound, 1)} records, ${f(
      p.walFpiPerRound,
      2,
    )} FPI)`,
  );
  console.log(
    '  per round  plans/call  plan µs  exec µs  (plan+exec µs/round)  buffers/call  WAL B/call  role  statement',
  );
  for (const s of p.statements.slice(0, 14))
    console.log(
      `  ${f(s.perRound).padStart(9)}  ${f(s.plansPerCall).padStart(10)}  ${f(s.planUs, 0).padStart(7)}  ${f(
        s.execUs,
        0,
      ).padStart(7)}  ${f(s.planUsPerRound + s.execUsPerRound, 0).padStart(20)}  ${f(s.buffersPerCall, 1).padStart(
        12,
      )}  ${f(s.walBytesPerCall, 0).padStart(10)}  ${s.role}  ${s.name.slice(0, 70)}`,
    );
}

async function main() {
  const infra = await bench.startInfra({
    log_connections: 'on',
    track_io_timing: 'on',
    'pg_stat_statements.track_planning': PLANNING ? 'on' : 'off',
    ...SETTINGS,
  });
  process.once('exit', () => infra.stopNow());
  let stack = null;
  let logFileSeen = null;
  try {
    const datname = new URL(infra.skaldUrl).pathname.slice(1);
    const dataDir = (await infra.admin.query('SHOW data_directory')).rows[0].data_directory;
    const logFile = path.join(path.dirname(dataDir), 'log');
    logFileSeen = logFile;
    for (const [k, v] of Object.entries(DB_SETTINGS))
      await infra.admin.query(`ALTER DATABASE ${datname} SET ${k} = '${v.replace(/'/g, "''")}'`);
    if (SQL_FILES.length > 0) {
      const { Client } = require(path.join(ROOT, 'node_modules/pg'));
      const c = new Client({ connectionString: infra.skaldUrl });
      await c.connect();
      for (const f of SQL_FILES) await c.query(fs.readFileSync(path.resolve(f), 'utf8'));
      await c.end();
    }
    stack = await bench.startStack(infra, {}, ENV);
    const { LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await bench.makeUsers(stack, 5);
    await bench.warmUp(stack, users, sim); // not counted
    const ctx = { admin: infra.admin, datname, logFile, stack, users, sim, pg: infra.pg };
    const phases = [];
    for (let n = 1; n <= PHASES; n++) {
      const p = await phase(ctx, n);
      print(p, n);
      phases.push(p);
    }
    fs.mkdirSync(OUT, { recursive: true });
    const file = path.join(OUT, `pg-round-${LABEL}.json`);
    fs.writeFileSync(
      file,
      `${JSON.stringify(
        {
          at: new Date().toISOString(),
          label: LABEL,
          config: {
            turns: TURNS,
            phases: PHASES,
            gapS: GAP_S,
            planning: PLANNING,
            dbSettings: DB_SETTINGS,
            env: ENV,
            settings: SETTINGS,
            sql: SQL_FILES,
          },
          phases,
        },
        null,
        2,
      )}\n`,
    );
    console.log(`written: ${path.relative(ROOT, file)}`);
  } finally {
    await stack?.stop();
    if (KEEP_LOG && logFileSeen) fs.copyFileSync(logFileSeen, path.resolve(KEEP_LOG));
    await infra.admin.end().catch(() => undefined);
    await infra.pg.destroy().catch(() => undefined);
    await infra.redis.destroy().catch(() => undefined);
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
