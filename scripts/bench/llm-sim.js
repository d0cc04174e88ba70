'use strict';
// llm-sim's CPU per chat-completions request, A/B: two llm-sim processes (this tree's build and another
// build, e.g. main's, copied aside before a change) answer the same captured Skald requests
// (sim-capture.js) through the real `openai` client, in alternating batches; each process's CPU is
// read from /proc/<pid>/task/*/schedstat (ns on the CPU, every thread), so the figure is the sim's
// own work per request and does not include the client's.
//
//   node scripts/bench/llm-sim.js [--old <dir holding llm-sim/main.js>] [--requests test-results/bench/sim-requests.json]
//                                 [--batches 10] [--per-batch 300] [--scripts 50] [--concurrency 8] [--latency 0]
//                                 [--new <dir>] [--profile <dir>]
//
// With 50 keyed scripts (`matchIn: 'last_user'`), as the turn bench's 50-conversation load registers.
const { spawn } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const ROOT = path.resolve(__dirname, '../..');
const { default: OpenAI } = require(path.join(ROOT, 'node_modules/openai'));
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const NEW_DIR = path.resolve(opt('new', path.join(ROOT, 'libs/testing/dist')));
const OLD_DIR = opt('old', null);
const REQUESTS = path.resolve(ROOT, opt('requests', 'test-results/bench/sim-requests.json'));
const BATCHES = Number(opt('batches', 10));
const PER_BATCH = Number(opt('per-batch', 300));
const SCRIPTS = Number(opt('scripts', 50));
const CONCURRENCY = Number(opt('concurrency', 8));
const STRACE = opt('strace', null); // a directory: each side's `strace -c -f` summary (start-up included)
const LATENCY_MS = Number(opt('latency', 0)); // each reply's first-byte delay (the turn bench's load: 200)
const PROFILE = opt('profile', null); // a directory: each side's CPU profile, <dir>/llm-sim-<side>.cpuprofile

function cpuNs(pid) {
  let ns = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread gone */
    }
  }
  return ns;
}

async function startSim(dir, name) {
  const prof = PROFILE
    ? ['--cpu-prof', `--cpu-prof-dir=${path.resolve(PROFILE)}`, `--cpu-prof-name=llm-sim-${name}.cpuprofile`]
    : [];
  const argv = [...prof, path.join(dir, 'llm-sim/main.js')];
  const [cmd, args] = STRACE
    ? ['strace', ['-c', '-f', '-o', path.resolve(STRACE, `llm-sim-${name}.strace`), process.execPath, ...argv]]
    : [process.execPath, argv];
  const child = spawn(cmd, args, {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const rl = readline.createInterface({ input: child.stdout });
  const line = await new Promise((resolve, reject) => {
    rl.once('line', resolve);
    child.once('exit', (code) => reject(new Error(`llm-sim exited ${code}`)));
  });
  const info = JSON.parse(line);
  return { child, url: info.url, adminUrl: info.adminUrl };
}

async function admin(sim, method, p, body) {
  const res = await fetch(`${sim.adminUrl}${p}`, {
    method,
    headers: { 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${await res.text()}`);
  return res.json();
}

/** The marker each captured request carries in its last user message (the turn bench's `cap-…`). */
function markerOf(body) {
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  const marker = /cap-[0-9a-f-]+/.exec(last.content);
  if (!marker) throw new Error('a captured request without its cap- marker');
  return marker[0];
}

async function prepare(sim, bodies) {
  const marker = markerOf(bodies[0]);
  // Decoys first (each conversation of the load has its own script), the matching one last.
  for (let i = 0; i < SCRIPTS - 1; i++) {
    await admin(sim, 'POST', '/_sim/scripts', {
      match: `decoy-${i}-${'x'.repeat(8)}`,
      matchIn: 'last_user',
      replies: [{ content: 'never' }],
    });
  }
  await admin(sim, 'POST', '/_sim/scripts', {
    match: marker,
    matchIn: 'last_user',
    repeatLast: true,
    replies: [
      ...Array.from({ length: 5 }, () => ({ tool_calls: [{ name: 'read_file', arguments: { path: 'bench.txt' } }] })),
      { content: 'Read it.' },
    ].map((r) => ({ ...r, latency: { firstByteMs: LATENCY_MS } })),
  });
  return new OpenAI({ baseURL: sim.url, apiKey: 'sk-bench', maxRetries: 0 });
}

async function one(client, body) {
  const stream = await client.chat.completions.create(body);
  let n = 0;
  for await (const chunk of stream) n += chunk.choices.length;
  return n;
}

async function batch(sim, client, bodies, count) {
  let next = 0;
  const before = cpuNs(sim.child.pid);
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (next < count) {
        const i = next++;
        await one(client, bodies[i % bodies.length]);
      }
    }),
  );
  // The last writes' completions and the log's updates have run by the time the client has [DONE].
  return cpuNs(sim.child.pid) - before;
}

async function main() {
  const bodies = JSON.parse(fs.readFileSync(REQUESTS, 'utf8')).map((e) => e.body);
  const bytes = bodies.map((b) => Buffer.byteLength(JSON.stringify(b)));
  console.log(
    `${bodies.length} captured requests, ${Math.min(...bytes)}–${Math.max(...bytes)} bytes (mean ${Math.round(bytes.reduce((a, b) => a + b, 0) / bytes.length)}); ` +
      `${SCRIPTS} keyed scripts; load ${os.loadavg()[0].toFixed(2)}`,
  );
  const sides = [{ name: 'new', dir: NEW_DIR }];
  if (OLD_DIR) sides.unshift({ name: 'old', dir: path.resolve(OLD_DIR) });
  for (const s of sides) {
    s.sim = await startSim(s.dir, s.name);
    s.child = s.sim.child;
    s.client = await prepare(s.sim, bodies);
    await batch(s.sim, s.client, bodies, PER_BATCH); // warm-up: JIT, the log's first fill
    s.ns = [];
  }
  try {
    for (let b = 0; b < BATCHES; b++) {
      for (const s of b % 2 === 0 ? sides : [...sides].reverse())
        s.ns.push((await batch(s.sim, s.client, bodies, PER_BATCH)) / PER_BATCH);
    }
  } finally {
    await Promise.all(
      sides.map((s) => new Promise((resolve) => (s.child.once('exit', resolve), s.child.kill('SIGTERM')))),
    );
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  for (const s of sides) {
    const us = s.ns.map((x) => x / 1000);
    console.log(
      `${s.name.padEnd(4)} CPU µs per request: median ${median(us).toFixed(0)} (batches: ${us.map((x) => x.toFixed(0)).join(' ')})`,
    );
  }
  console.log(`load after: ${os.loadavg()[0].toFixed(2)}`);
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
