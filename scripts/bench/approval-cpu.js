'use strict';
// CPU per `approval.check` in the approval service's process (all its threads, from
// /proc/<pid>/task/*/schedstat), sequential checks of `read_file` in the workspace (the tool round's
// check: allowed by the default rules, audited), against a bare NATS echo responder's CPU for a
// request of the same size — the floor any service answering over NATS pays on this machine. With
// `--old <tree>` the approval service of another tree (its built dist) runs too; `--parts` adds
// responders made of the service's edge alone (Bus.handle, with and without the log context). Batches
// alternate between responders, each on a NATS server of its own; a database next to DATABASE_URL.
// `--gap-ms N` pauses between checks, so that the responder sleeps between them as it does in a turn
// (on this machine a request that wakes a sleeping process costs several times a hot one).
//
//   node scripts/bench/approval-cpu.js [--old /work/main] [--parts] [--gap-ms 10] [--batches 6]
//       [--per-batch 2000] [--profile <dir>] [--strace <dir>]
const { spawn } = require('node:child_process');
const { randomUUID } = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const OLD = opt('old', null);
const BATCHES = Number(opt('batches', 6));
const PER_BATCH = Number(opt('per-batch', 2000));
const PROFILE = opt('profile', null);
/** --gap-ms N: a pause between checks (the responder falls asleep between them, as in a turn). */
const GAP_MS = Number(opt('gap-ms', 0));
/** With --strace <dir>: system calls of each process over its batches (strace -c -f), in <dir>/<name>.txt. */
const STRACE = opt('strace', null);

const { freshDatabase } = require('./bench-db');
const { freePort, PrivateNats } = require(path.join(ROOT, 'libs/testing/dist'));
const { connect } = require(path.join(ROOT, 'node_modules/nats'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function traced(pid, name) {
  if (!STRACE) return () => Promise.resolve(undefined);
  fs.mkdirSync(STRACE, { recursive: true });
  const child = spawn('strace', ['-c', '-f', '-o', path.join(STRACE, `${name}.txt`), '-p', String(pid)], {
    stdio: 'ignore',
  });
  const exited = new Promise((r) => child.once('exit', r));
  return async () => {
    child.kill('SIGINT');
    await exited;
  };
}

function cpuNs(pid) {
  let ns = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* the thread ended */
    }
  }
  return ns;
}

async function startService(tree, name, dbUrl, natsUrl) {
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      ...(PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`, `--cpu-prof-name=${name}.cpuprofile`] : []),
      path.join(tree, 'apps/approval-service/dist/main.js'),
    ],
    {
      cwd: tree,
      env: {
        ...process.env,
        NODE_ENV: 'production',
        DATABASE_URL: dbUrl,
        NATS_URL: natsUrl,
        PORT: String(port),
        LOG_LEVEL: 'info',
        SKALD_INSTANCE: `${name}-${process.pid}`,
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    },
  );
  return child;
}

function startEcho(natsUrl, subject) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const { connect } = require(${JSON.stringify(path.join(ROOT, 'node_modules/nats'))});
       connect({ servers: ${JSON.stringify(natsUrl)} }).then(async (nc) => {
         nc.subscribe(${JSON.stringify(subject)}, { queue: 'echo', callback: (e, m) => m.respond(m.data) });
         await nc.flush();
         process.stdout.write('ready\\n');
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((r) => child.stdout.once('data', () => r(child)));
}

/**
 * A responder on `approval.check` made of the parts of the service's path, to tell their costs
 * apart (`--parts`): `bus` — Bus.handle (request parse, reply encode) with a constant answer;
 * `bus+als` — the same inside an AsyncLocalStorage run with the request's ids, as the gate handler
 * ran before its log ids went explicit (what an AsyncLocalStorage costs here: the promise hooks).
 */
function startPart(natsUrl, withAls) {
  const child = spawn(
    process.execPath,
    [
      '-e',
      `const { Bus } = require(${JSON.stringify(path.join(ROOT, 'libs/messaging/dist'))});
       const als = new (require('node:async_hooks').AsyncLocalStorage)();
       const withIds = (req, fn) => als.run({ userId: req.actor.userId, sessionId: req.session_id }, fn);
       const quiet = { warn() {}, error() {} };
       Bus.connect({ servers: ${JSON.stringify(natsUrl)}, name: 'part', checkOutgoing: false }, quiet).then(async (bus) => {
         const answer = async () => ({ decision: 'allow', rule_id: 'r', reason: 'allowed by rule' });
         bus.handle('approval.check', ${withAls ? '(req) => withIds(req, answer)' : 'answer'});
         await bus.nc.flush();
         process.stdout.write('ready\\n');
       });`,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, NODE_ENV: 'production' } },
  );
  return new Promise((r) => child.stdout.once('data', () => r(child)));
}

async function main() {
  const dbUrl = await freshDatabase('skald_bench_approval_cpu');
  const actor = { userId: randomUUID(), role: 'user' };
  const check = {
    actor,
    session_id: randomUUID(),
    tool_call_id: randomUUID(),
    agent_id: 'main',
    source: 'web',
    tool_name: 'read_file',
    arguments: { path: 'bench.txt' },
  };
  const data = Buffer.from(JSON.stringify(check));
  // Each responder has a NATS server of its own (a stopped member of a queue group would still be
  // sent requests), and this process a connection to each; batches alternate between them.
  const responders = [];
  const add = async (name, start) => {
    const nats = await PrivateNats.start();
    const child = await start(nats.url);
    const nc = await connect({ servers: nats.url });
    responders.push({ name, nats, child, nc, subject: name === 'echo' ? 'bench.echo' : 'approval.check', cpu: [] });
  };
  try {
    await add('this', (url) => startService(ROOT, 'this', dbUrl, url));
    if (OLD) await add('old', (url) => startService(path.resolve(OLD), 'old', dbUrl, url));
    if (argv.includes('--parts')) {
      await add('bus', (url) => startPart(url, false));
      await add('bus+als', (url) => startPart(url, true));
    }
    await add('echo', (url) => startEcho(url, 'bench.echo'));
    const ask = (r) => r.nc.request(r.subject, data, { timeout: 5000 });
    for (const r of responders)
      for (let tries = 0; ; tries++) {
        try {
          await ask(r);
          break;
        } catch (e) {
          if (tries > 100) throw new Error(`${r.name} did not answer: ${e.message}`);
          await sleep(200);
        }
      }
    await sleep(1000);
    for (let i = 0; i < 3000; i++) for (const r of responders) await ask(r); // warm-up (JIT, pools)
    for (let b = 0; b < BATCHES; b++) {
      for (const r of responders) {
        const pid = r.child.pid;
        const stop = traced(pid, `${r.name}-${b}`);
        if (STRACE) await sleep(500);
        const before = cpuNs(pid);
        for (let i = 0; i < PER_BATCH; i++) {
          if (GAP_MS > 0) await sleep(GAP_MS);
          const reply = JSON.parse(Buffer.from((await ask(r)).data).toString());
          if (r.name !== 'echo' && (!reply.ok || reply.data.decision !== 'allow'))
            throw new Error(`unexpected answer ${JSON.stringify(reply)}`);
        }
        r.cpu.push((cpuNs(pid) - before) / 1000 / PER_BATCH);
        await stop();
      }
    }
    const med = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
    console.log(
      `CPU µs per approval.check (read_file, allowed, audited), ${BATCHES} × ${PER_BATCH}${GAP_MS ? `, ${GAP_MS} ms apart` : ''}, median of batches:`,
    );
    for (const r of responders)
      console.log(
        `  ${r.name.padEnd(8)} ${med(r.cpu).toFixed(1).padStart(7)}   (batches: ${r.cpu.map((x) => x.toFixed(1)).join(', ')})`,
      );
  } finally {
    for (const r of responders) {
      await r.nc.close().catch(() => undefined);
      r.child.kill('SIGTERM');
      if (r.child.exitCode === null) await new Promise((res) => r.child.once('exit', res));
      await r.nats.destroy();
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
