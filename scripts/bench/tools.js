'use strict';
// Benchmark of the tool runner: `execute_cmd` of `true` end to end (NATS request,
// durable start record, bubblewrap sandbox start, reply; target p50 ≤ 20 ms) and `read_file` of a small
// file (target p50 ≤ 5 ms). Uses the built dist (run `npm run build` first), a Postgres database
// `skald_bench_tools` it (re)creates next to DATABASE_URL, and a NATS server of its own when
// `nats-server` is installed (any other tool runner on the shared NATS_URL would take a share of the
// requests), else NATS_URL. The tool runner runs as its own process; calls are sent one at a time.
//
// Then the sandbox's start alone (the runner's launcher, bubblewrap with its limits and syscall filter,
// the sandbox's sh running `true`; no NATS, no Postgres), with the filter and without it, interleaved so
// that a busy machine weighs on both alike.
//
//   node scripts/bench/tools.js [--cmds 300] [--reads 2000] [--starts 300]
// The runner's SKALD_SANDBOX_* settings come from the environment (SKALD_SANDBOX_CGROUPS=off: the
// per-sandbox rlimit fallback).
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const { mkdtempSync, rmSync } = require('node:fs');
const net = require('node:net');
const os = require('node:os');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const CMDS = arg('cmds', 300);
const READS = arg('reads', 2000);
const STARTS = arg('starts', 300);
const base = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/skald');
const BENCH_URL = new URL('/skald_bench_tools', base).toString();

const { freshDatabase } = require('./bench-db');
const { Bus } = require(path.join(ROOT, 'libs/messaging/dist'));

const quiet = { warn() {}, error() {} };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const portOpen = (port) =>
  new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

/** A private nats-server on a free port, or null when none is installed. */
async function privateNats() {
  const port = await new Promise((resolve) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const p = /** @type {import('node:net').AddressInfo} */ (srv.address()).port;
      srv.close(() => resolve(p));
    });
  });
  const child = spawn(process.env.NATS_SERVER_BIN || 'nats-server', ['-a', '127.0.0.1', '-p', String(port)], {
    stdio: 'ignore',
  });
  let failed = false;
  child.once('error', () => (failed = true));
  for (let i = 0; i < 100 && !failed && child.exitCode === null; i++) {
    if (await portOpen(port)) return { url: `nats://127.0.0.1:${port}`, child };
    await sleep(50);
  }
  child.kill('SIGKILL');
  return null;
}

function quantiles(ms) {
  ms.sort((a, b) => a - b);
  const q = (p) => ms[Math.min(ms.length - 1, Math.floor((p / 100) * ms.length))];
  return { p50: q(50), p90: q(90), p99: q(99), max: ms[ms.length - 1] };
}

async function main() {
  await freshDatabase('skald_bench_tools');
  const nats = await privateNats();
  const NATS_URL = nats ? nats.url : process.env.NATS_URL || 'nats://127.0.0.1:4222';
  const workspaces = mkdtempSync(path.join(os.tmpdir(), 'skald-bench-ws-'));
  const child = spawn(process.execPath, [path.join(ROOT, 'apps/tool-runner/dist/main.js')], {
    cwd: ROOT,
    env: {
      ...process.env,
      DATABASE_URL: BENCH_URL,
      NATS_URL,
      PORT: '0',
      LOG_LEVEL: 'warn',
      SKALD_WORKSPACES: workspaces,
      SKALD_INSTANCE: `bench-${process.pid}`,
    },
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  const bus = await Bus.connect(
    { servers: NATS_URL, name: `bench-client-${process.pid}`, requestTimeoutMs: 10_000 },
    quiet,
  );
  const actor = { userId: randomUUID(), role: 'user' };
  const sessionId = randomUUID();
  const call = (name, args) =>
    bus.call('tools.exec', { actor, session_id: sessionId, tool_call_id: randomUUID(), name, arguments: args });
  try {
    for (let tries = 0; ; tries++) {
      try {
        await call('write_file', { path: 'bench.txt', content: 'line\n'.repeat(100) });
        break;
      } catch (e) {
        if (tries > 100 || child.exitCode !== null) throw new Error(`tool runner did not answer: ${e.message}`);
        await sleep(200);
      }
    }
    const first = await call('execute_cmd', { command: 'true' });
    if (first.status !== 'done') throw new Error(`execute_cmd failed: ${JSON.stringify(first)}`);
    for (let i = 0; i < 30; i++) await call('execute_cmd', { command: 'true' }); // warm-up
    for (let i = 0; i < 200; i++) await call('read_file', { path: 'bench.txt' });
    const time = async (n, name, args) => {
      const ms = [];
      for (let i = 0; i < n; i++) {
        const t = process.hrtime.bigint();
        const r = await call(name, args);
        ms.push(Number(process.hrtime.bigint() - t) / 1e6);
        if (r.status !== 'done') throw new Error(`${name} failed: ${JSON.stringify(r)}`);
      }
      return quantiles(ms);
    };
    const cmd = await time(CMDS, 'execute_cmd', { command: 'true' });
    const read = await time(READS, 'read_file', { path: 'bench.txt' });
    const line = (what, q, target) =>
      `${what}: p50 ${q.p50.toFixed(2)} ms, p90 ${q.p90.toFixed(2)} ms, p99 ${q.p99.toFixed(2)} ms, max ${q.max.toFixed(2)} ms ` +
      `(target p50 ≤ ${target} ms: ${q.p50 <= target ? 'met' : 'NOT met'})`;
    console.log(line(`execute_cmd \`true\` end to end, sandbox included, ${CMDS} sequential calls`, cmd, 20));
    console.log(line(`read_file of a 100-line file, ${READS} sequential calls`, read, 5));
  } finally {
    await sandboxStarts(workspaces).catch((e) => console.error(`sandbox start bench failed: ${e.message}`));
    await bus.drain().catch(() => undefined);
    child.kill('SIGTERM');
    await new Promise((r) => (child.exitCode !== null ? r(undefined) : child.once('exit', r)));
    if (nats) nats.child.kill('SIGKILL');
    rmSync(workspaces, { recursive: true, force: true });
  }
}

/** `true` in the sandbox through the runner's own BwrapCommandRunner, filter on and off in turn. */
async function sandboxStarts(workspaces) {
  const { BwrapCommandRunner } = require(path.join(ROOT, 'apps/tool-runner/dist/command/bwrap-command.runner'));
  const { ToolRunnerConfigSchema } = require(path.join(ROOT, 'apps/tool-runner/dist/config'));
  const silent = { info() {}, warn() {}, error() {}, debug() {} };
  // The sandbox settings of the environment (e.g. SKALD_SANDBOX_CGROUPS=off for the rlimit fallback) apply here too.
  const sandboxEnv = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SKALD_SANDBOX_')));
  const runner = (seccomp) =>
    new BwrapCommandRunner(ToolRunnerConfigSchema.parse({ ...sandboxEnv, SKALD_SANDBOX_SECCOMP: seccomp }), silent);
  const runners = { on: runner('on'), off: runner('off') };
  const home = mkdtempSync(path.join(workspaces, 'starts-'));
  const ms = { on: [], off: [] };
  try {
    for (const r of Object.values(runners)) {
      const s = await r.init();
      if (!s.available) throw new Error(s.summary);
    }
    const once = async (which) => {
      const t = process.hrtime.bigint();
      const out = await runners[which].run({
        command: 'true',
        cwd: home,
        virtualCwd: '/workspace',
        home,
        timeoutSec: 10,
        signal: new AbortController().signal,
      });
      if (out.kind !== 'exited' || out.exitCode !== 0) throw new Error(`true failed: ${JSON.stringify(out)}`);
      return Number(process.hrtime.bigint() - t) / 1e6;
    };
    for (let i = 0; i < 20; i++) await once(i % 2 ? 'on' : 'off'); // warm-up
    for (let i = 0; i < STARTS; i++) for (const w of i % 2 ? ['on', 'off'] : ['off', 'on']) ms[w].push(await once(w));
    const limits = (await runners.on.init()).summary.replace(/^.*; limits /, '').replace(/\)$/, '');
    for (const w of ['on', 'off']) {
      const q = quantiles(ms[w]);
      console.log(
        `sandbox start of \`true\` (launcher + bwrap + sh), syscall filter ${w}, ${STARTS} runs: ` +
          `p50 ${q.p50.toFixed(2)} ms, p99 ${q.p99.toFixed(2)} ms, max ${q.max.toFixed(2)} ms` +
          (w === 'on' ? ` (target p50 ≤ 20 ms: ${q.p50 <= 20 ? 'met' : 'NOT met'}; limits ${limits})` : ''),
      );
    }
  } finally {
    for (const r of Object.values(runners)) await r.onApplicationShutdown();
  }
}

main().catch((e) => {
  console.error(e instanceof Error ? e.message : e);
  process.exit(1);
});
