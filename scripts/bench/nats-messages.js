#!/usr/bin/env node
'use strict';
// NATS messages per tool round, by subject: what crosses the broker during fresh turns of the turn
// benchmark's workload (the stack of turn.js: every app a process with its own NATS user). A tap
// connection (the private server's unrestricted test user) subscribes to `>` while the turns run and
// counts every message the server routes — publishes, requests and their replies (`_INBOX.…`) — with
// its payload and header bytes. Ids in subjects are folded (`events.<user>.<session>` →
// `events.*.*`), so each line is one kind of message. Counts do not depend on the machine's load.
//
//   node scripts/bench/nats-messages.js [--turns 10] [--out test-results/bench]
//
// Prints one table (messages, payload bytes and header bytes per round) and writes
// <out>/nats-messages.json.
const fs = require('node:fs');
const path = require('node:path');
const bench = require('./turn');

const ROOT = path.resolve(__dirname, '../..');
const { connect } = require(path.join(ROOT, 'node_modules/nats'));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const TURNS = Number(opt('turns', 10));
const OUT = path.resolve(ROOT, opt('out', 'test-results/bench'));
/** --profile: a CPU profile of the gateway, approval service and tool runner (<out>/profiles-nats/), and the counted window. */
const PROFILE = argv.includes('--profile');
const PROFILED = ['gateway', 'approval-service', 'tool-runner', 'session-worker'];

/** CPU ns of every thread of a process (schedstat: precise, unlike /proc/<pid>/stat's 10 ms ticks). */
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

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
/** The kind of a subject: ids folded to `*`, an inbox reply to `_INBOX.<user>` (whose reply it is). */
function kindOf(subject) {
  const parts = subject.split('.');
  if (parts[0] === '_INBOX') return parts.length > 3 ? `_INBOX.${parts[1]} (replies)` : '_INBOX (replies)';
  return parts.map((p) => (UUID.test(p) || /^\d+$/.test(p) ? '*' : p)).join('.');
}

async function main() {
  const infra = await bench.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  let tap = null;
  try {
    const profDir = path.join(OUT, 'profiles-nats');
    if (PROFILE) fs.mkdirSync(profDir, { recursive: true });
    stack = await bench.startStack(
      infra,
      PROFILE
        ? Object.fromEntries(
            PROFILED.map((n) => [n, ['--cpu-prof', `--cpu-prof-dir=${profDir}`, `--cpu-prof-name=${n}.cpuprofile`]]),
          )
        : {},
    );
    const { LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await bench.makeUsers(stack, 5);
    await bench.warmUp(stack, users, sim); // not counted
    const markers = bench.newMarkers(TURNS, 'nats');
    const ids = await bench.scriptConversations(sim, markers, 1, bench.CFG.perRound);
    const convs = await bench.openConversations(stack, users, markers);
    const { servers, user, pass } = stack.natsClient;
    tap = await connect({ servers, user, pass, name: 'bench-tap' });
    const counts = new Map();
    /** Event messages by type (a session event's, an ephemeral event's). */
    const types = new Map();
    let counting = true;
    tap.subscribe('>', {
      callback: (err, msg) => {
        if (err || !counting) return;
        const k = kindOf(msg.subject);
        const c = counts.get(k) ?? { messages: 0, payloadBytes: 0, headerBytes: 0 };
        c.messages++;
        c.payloadBytes += msg.data.length;
        // nats.js keeps the header block it read; its size is what crossed the wire
        const h = msg.headers;
        if (h) c.headerBytes += h.encode().length;
        counts.set(k, c);
        if (k === 'events.*.*' || k === 'ephemeral.*.*') {
          let type = '?';
          try {
            const v = JSON.parse(Buffer.from(msg.data).toString('utf8'));
            type = Array.isArray(v.events) ? `batch of ${v.events.length}` : v.type;
          } catch {
            /* counted above */
          }
          types.set(`${k} ${type}`, (types.get(`${k} ${type}`) ?? 0) + 1);
        }
      },
    });
    await tap.flush();
    const procs = { ...Object.fromEntries(stack.processes.map((p) => [p.name, p.child.pid])), nats: stack.nats?.pid };
    const cpuBefore = Object.fromEntries(Object.entries(procs).map(([n, pid]) => [n, pid ? cpuNs(pid) : 0]));
    const windowFromUs = Number(process.hrtime.bigint() / 1000n);
    let done = 0;
    for (const c of convs) if ((await c.turn()).how === 'done') done++;
    // whatever the last turn announced after its `done` (turn_ended, heartbeats) within a moment
    await new Promise((r) => setTimeout(r, 300));
    counting = false;
    const windowUs = [windowFromUs, Number(process.hrtime.bigint() / 1000n)];
    const cpuUsPerRound = Object.fromEntries(
      Object.entries(procs).map(([n, pid]) => [
        n,
        pid ? (cpuNs(pid) - cpuBefore[n]) / 1000 / (TURNS * bench.PER_ROUND_ROUNDS) : 0,
      ]),
    );
    for (const c of convs) c.close();
    await bench.unscript(sim, ids);
    if (done !== TURNS) throw new Error(`${TURNS - done} of ${TURNS} turns did not finish`);
    const rounds = TURNS * bench.PER_ROUND_ROUNDS;
    const rows = [...counts.entries()]
      .map(([subject, c]) => ({
        subject,
        perRound: c.messages / rounds,
        payloadBytesPerRound: c.payloadBytes / rounds,
        headerBytesPerRound: c.headerBytes / rounds,
      }))
      .sort((a, b) => b.perRound - a.perRound);
    const total = rows.reduce(
      (a, r) => ({
        perRound: a.perRound + r.perRound,
        payloadBytesPerRound: a.payloadBytesPerRound + r.payloadBytesPerRound,
        headerBytesPerRound: a.headerBytesPerRound + r.headerBytesPerRound,
      }),
      { perRound: 0, payloadBytesPerRound: 0, headerBytesPerRound: 0 },
    );
    console.log(`NATS messages per round (${TURNS} fresh turns of ${bench.PER_ROUND_ROUNDS} rounds, tap on '>'):`);
    console.log('| subject | messages / round | payload bytes / round | header bytes / round |');
    console.log('| --- | --- | --- | --- |');
    for (const r of [...rows, { subject: '**all**', ...total }])
      console.log(
        `| \`${r.subject}\` | ${r.perRound.toFixed(2)} | ${r.payloadBytesPerRound.toFixed(0)} | ${r.headerBytesPerRound.toFixed(0)} |`,
      );
    console.log(
      `CPU µs per round (schedstat, tap included in nats): ${Object.entries(cpuUsPerRound)
        .map(([n, us]) => `${n} ${us.toFixed(0)}`)
        .join(', ')}`,
    );
    console.log(
      `event messages per round by type: ${[...types.entries()]
        .sort((a, b) => b[1] - a[1])
        .map(([t, n]) => `${t} ${(n / rounds).toFixed(2)}`)
        .join(', ')}`,
    );
    if (PROFILE)
      console.log(
        `profiles: ${path.relative(ROOT, profDir)} (written at stop); read the counted window with ` +
          `scripts/bench/profile-functions.js <file> --window ${windowUs.join(',')}`,
      );
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(
      path.join(OUT, 'nats-messages.json'),
      `${JSON.stringify({ at: new Date().toISOString(), turns: TURNS, rounds, total, bySubject: rows, cpuUsPerRound, windowUs, eventTypes: Object.fromEntries(types) }, null, 2)}\n`,
    );
  } finally {
    await tap?.close().catch(() => undefined);
    await stack?.stop();
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
