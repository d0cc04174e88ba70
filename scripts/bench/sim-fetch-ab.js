'use strict';
// llm-sim's CPU per request by the client that calls it: the same captured Skald requests
// (sim-capture.js), one at a time as the turn bench's fresh phase sends them, through the `openai`
// client with Skald's fetch (libs/llm's createLlmHttpFetch) and with the SDK's default fetch (undici,
// as the floor and the skeleton call it), in alternating batches against one llm-sim process. Prints
// the sim's CPU µs per request (from /proc/<pid>/task/*/schedstat) and the TCP connections each client
// opened per request (diagnostics_channel `net.client.socket`).
//
//   node scripts/bench/sim-fetch-ab.js [--requests test-results/bench/sim-requests.json]
//                                      [--batches 6] [--per-batch 200] [--scripts 30]
const { spawn } = require('node:child_process');
const dc = require('node:diagnostics_channel');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const readline = require('node:readline');

const ROOT = path.resolve(__dirname, '../..');
const { default: OpenAI } = require(path.join(ROOT, 'node_modules/openai'));
const { createLlmHttpFetch } = require(path.join(ROOT, 'libs/llm/dist'));
const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const REQUESTS = path.resolve(ROOT, opt('requests', 'test-results/bench/sim-requests.json'));
const BATCHES = Number(opt('batches', 6));
const PER_BATCH = Number(opt('per-batch', 200));
const SCRIPTS = Number(opt('scripts', 30));

let sockets = 0;
dc.subscribe('net.client.socket', () => sockets++);

/** CPU ns of the process's main thread (`main`) and of all its threads. */
function cpuNs(pid, main = false) {
  let ns = 0;
  for (const t of fs.readdirSync(`/proc/${pid}/task`)) {
    if (main && Number(t) !== pid) continue;
    try {
      ns += Number(fs.readFileSync(`/proc/${pid}/task/${t}/schedstat`, 'utf8').split(' ')[0]);
    } catch {
      /* thread gone */
    }
  }
  return ns;
}

async function startSim() {
  const child = spawn(process.execPath, [path.join(ROOT, 'libs/testing/dist/llm-sim/main.js')], {
    env: { ...process.env, PORT: '0', HOST: '127.0.0.1' },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: child.stdout }).once('line', resolve);
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

function markerOf(body) {
  const last = [...body.messages].reverse().find((m) => m.role === 'user');
  const text = typeof last.content === 'string' ? last.content : last.content.map((p) => p.text ?? '').join('\n');
  const marker = /cap-[0-9a-f-]+/.exec(text);
  if (!marker) throw new Error('a captured request without its cap- marker');
  return marker[0];
}

async function one(client, body) {
  const stream = await client.chat.completions.create(body);
  let n = 0;
  for await (const chunk of stream) n += chunk.choices.length;
  return n;
}

async function main() {
  const bodies = JSON.parse(fs.readFileSync(REQUESTS, 'utf8')).map((e) => e.body);
  const sim = await startSim();
  for (let i = 0; i < SCRIPTS - 1; i++)
    await admin(sim, 'POST', '/_sim/scripts', {
      match: `decoy-${i}`,
      matchIn: 'last_user',
      replies: [{ content: 'x' }],
    });
  await admin(sim, 'POST', '/_sim/scripts', {
    match: markerOf(bodies[0]),
    matchIn: 'last_user',
    repeatLast: true,
    replies: [{ tool_calls: [{ name: 'read_file', arguments: { path: 'bench.txt' } }] }],
  });
  // The same requests with every non-ASCII character replaced by as many ASCII bytes as its UTF-8 has.
  const ascii = bodies.map((b) =>
    JSON.parse(JSON.stringify(b).replace(/[\u0080-\u{10ffff}]/gu, (c) => '-'.repeat(Buffer.byteLength(c)))),
  );
  const skaldFetch = new OpenAI({ baseURL: sim.url, apiKey: 'sk-bench', maxRetries: 0, fetch: createLlmHttpFetch() });
  const defaultFetch = new OpenAI({ baseURL: sim.url, apiKey: 'sk-bench', maxRetries: 0 });
  const sides = [
    { name: 'skald fetch', client: skaldFetch, bodies },
    { name: 'default fetch', client: defaultFetch, bodies },
    { name: 'skald, ASCII', client: skaldFetch, bodies: ascii },
  ].map((s) => ({
    ...s,
    us: /** @type {number[]} */ ([]),
    mainUs: /** @type {number[]} */ ([]),
    conns: /** @type {number[]} */ ([]),
  }));
  const batch = async (s) => {
    const before = cpuNs(sim.child.pid);
    const mainBefore = cpuNs(sim.child.pid, true);
    const socketsBefore = sockets;
    for (let i = 0; i < PER_BATCH; i++) await one(s.client, s.bodies[i % s.bodies.length]);
    await new Promise((r) => setTimeout(r, 20)); // the sim's last `close` handlers
    return {
      us: (cpuNs(sim.child.pid) - before) / 1000 / PER_BATCH,
      mainUs: (cpuNs(sim.child.pid, true) - mainBefore) / 1000 / PER_BATCH,
      conns: (sockets - socketsBefore) / PER_BATCH,
    };
  };
  try {
    for (const s of sides) await batch(s); // warm-up
    for (let b = 0; b < BATCHES; b++)
      for (const s of b % 2 === 0 ? sides : [...sides].reverse()) {
        const r = await batch(s);
        s.us.push(r.us);
        s.mainUs.push(r.mainUs);
        s.conns.push(r.conns);
      }
  } finally {
    sim.child.kill('SIGTERM');
  }
  const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
  console.log(`${bodies.length} captured requests, ${SCRIPTS} keyed scripts, load ${os.loadavg()[0].toFixed(2)}`);
  for (const s of sides)
    console.log(
      `${s.name.padEnd(14)} sim CPU µs per request: median ${median(s.us).toFixed(0)} (${s.us.map((x) => x.toFixed(0)).join(' ')}); ` +
        `main thread ${median(s.mainUs).toFixed(0)}; connections opened per request ${median(s.conns).toFixed(2)}`,
    );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
