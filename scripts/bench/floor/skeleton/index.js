'use strict';
// The architecture skeleton: the least the fixed topology of ARCHITECTURE.md costs on this machine.
// Bare Node processes — gateway.js, worker.js, approval.js, runner.js — doing exactly the hops of a
// Skald tool round and of a message's echo with trivial handlers, over their own NATS server
// (GOMAXPROCS=1, as PrivateNats runs it for the stack) and the benchmark's Postgres and llm-sim:
//
//   client ─WS→ gateway ─session.submit→ worker: 1 statement (lease + message + user_message event)
//          ←ack─        ←reply──────────           then events.<user>.<session> user_message (echo)
//   per round, worker: llm-sim (streamed, openai client) → 1 commit (assistant + call + tool_start)
//          → tool_start → approval.check → approval (allow; audit batched) → tools.exec → runner
//          (read_file, jailed) → 1 commit (call done + tool_done) → tool_done; final: 1 commit + done
//
// Driven by scripts/bench/turn.js (a third system in its run, printed as a reference row).
const { spawn } = require('node:child_process');
const path = require('node:path');
const readline = require('node:readline');

const SCHEMA = `
CREATE TABLE skel_sessions (id uuid PRIMARY KEY, user_id uuid NOT NULL, lease_owner text, lease_epoch int NOT NULL,
  lease_until timestamptz, last_seq int NOT NULL, turn_state text NOT NULL);
CREATE TABLE skel_messages (id bigserial PRIMARY KEY, session_id uuid NOT NULL, client_message_id uuid, role text NOT NULL,
  body jsonb NOT NULL, epoch int NOT NULL, created_at timestamptz NOT NULL DEFAULT now(),
  UNIQUE (session_id, client_message_id));
CREATE INDEX ON skel_messages (session_id, id);
CREATE TABLE skel_tool_calls (message_id bigint NOT NULL, id text NOT NULL, ord int NOT NULL, session_id uuid NOT NULL,
  name text NOT NULL, args jsonb, status text NOT NULL, result text, PRIMARY KEY (message_id, id));
CREATE TABLE skel_events (session_id uuid NOT NULL, seq int NOT NULL, type text NOT NULL, body jsonb NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (session_id, seq));
CREATE TABLE skel_audit (id bigserial PRIMARY KEY, at timestamptz NOT NULL, user_id uuid NOT NULL, session_id uuid,
  call_id text, tool text NOT NULL, decision text NOT NULL, args_digest text NOT NULL);
`;

/** Creates the skeleton's tables on a connected pg client (its own database). */
async function createSchema(client) {
  await client.query(SCHEMA);
}

const ROLES = ['gateway', 'worker', 'approval', 'runner'];

/** One process of the skeleton; resolves once it printed `ready` (the gateway first its port). */
function startRole(role, env) {
  // SKALD_SKELETON_PROF_DIR: a CPU profile of each process, written there when it stops.
  const dir = process.env.SKALD_SKELETON_PROF_DIR;
  const name = `skeleton-${role}${role === 'worker' && env.SKEL_REQUEST_SIZE === 'skald' ? '-skald' : ''}`;
  const nodeArgs = dir ? ['--cpu-prof', `--cpu-prof-dir=${dir}`, `--cpu-prof-name=${name}.cpuprofile`] : [];
  const child = spawn(process.execPath, [...nodeArgs, path.join(__dirname, `${role}.js`)], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const lines = readline.createInterface({ input: child.stdout });
  return new Promise((resolve, reject) => {
    const p = { role, child, port: /** @type {number | null} */ (null) };
    const onExit = (code) => reject(new Error(`skeleton ${role} exited with ${code}`));
    child.once('exit', onExit);
    lines.on('line', (l) => {
      if (l.startsWith('port ')) p.port = Number(l.slice(5));
      if (l === 'ready') {
        child.off('exit', onExit);
        resolve(p);
      }
    });
  });
}

async function stopRole(p) {
  if (p.child.exitCode !== null || p.child.signalCode !== null) return;
  const gone = new Promise((r) => p.child.once('exit', r));
  p.child.kill('SIGTERM');
  const t = setTimeout(() => p.child.kill('SIGKILL'), 5000);
  await gone;
  clearTimeout(t);
}

/**
 * Starts the skeleton: its own NATS server (`PrivateNats` of libs/testing, GOMAXPROCS=1) and the four
 * processes. `opts`: { databaseUrl, simUrl, workspaces, requestSize: 'floor' | 'skald', PrivateNats }.
 */
async function startSkeleton(opts) {
  const nats = await opts.PrivateNats.start();
  const env = {
    SKEL_NATS_URL: nats.url,
    SKEL_DATABASE_URL: opts.databaseUrl,
    SKEL_SIM_URL: opts.simUrl,
    SKEL_WORKSPACES: opts.workspaces,
    SKEL_REQUEST_SIZE: opts.requestSize ?? 'floor',
    NODE_ENV: 'production',
  };
  const procs = {};
  try {
    for (const role of ROLES) procs[role] = await startRole(role, env);
  } catch (e) {
    for (const p of Object.values(procs)) await stopRole(p);
    await nats.destroy();
    throw e;
  }
  return {
    nats,
    procs,
    gatewayUrl: `http://127.0.0.1:${procs.gateway.port}`,
    /** Restarts the worker with another request size (its cache and JIT start over). */
    async setRequestSize(requestSize) {
      await stopRole(procs.worker);
      procs.worker = await startRole('worker', { ...env, SKEL_REQUEST_SIZE: requestSize });
    },
    async stop() {
      for (const role of ROLES) await stopRole(procs[role]);
      await nats.destroy();
    },
  };
}

module.exports = { createSchema, startSkeleton, ROLES };
