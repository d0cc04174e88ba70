#!/usr/bin/env node
'use strict';
// System calls per tool round, by process of the stack (`strace -c -f` attached to each during
// fresh turns of the turn benchmark's workload). On the VMs this runs on a system call costs
// ~10–25 µs (fstat ~11 µs, a socket write ~23 µs), so their count is a large part of a round's CPU:
// this says which process makes them and which calls they are. The counts do not depend on the
// machine's speed or load (strace slows the processes; the figures are calls, not times).
//
//   node scripts/bench/syscalls.js [--turns 10] [--out test-results/bench]
//
// Prints one line per process and writes <out>/syscalls.json. Without strace on the machine it says
// so and exits 0 (it is a diagnostic, not a target).
const { spawn, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const bench = require('./turn');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const TURNS = Number(opt('turns', 10));
const OUT = path.resolve(__dirname, '../..', opt('out', 'test-results/bench'));
const TOP = 8;

/** strace -c's table: calls per system call name (the `total` row left out). */
function parseSummary(text) {
  const calls = {};
  for (const line of text.split('\n')) {
    const f = line.trim().split(/\s+/);
    // % time, seconds, usecs/call, calls, [errors], syscall
    if (f.length < 5 || !/^[\d.]+$/.test(f[0]) || !/^\d+$/.test(f[3])) continue;
    const name = f[f.length - 1];
    if (name === 'total') continue;
    calls[name] = (calls[name] ?? 0) + Number(f[3]);
  }
  return calls;
}

async function main() {
  if (spawnSync('strace', ['-V']).status !== 0) {
    console.log('syscalls: skipped (no strace on this machine)');
    return;
  }
  const infra = await bench.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'skald-strace-'));
  try {
    stack = await bench.startStack(infra);
    const { LlmSimAdminClient } = require(path.resolve(__dirname, '../../libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await bench.makeUsers(stack, 5);
    await bench.warmUp(stack, users, sim); // not counted
    const markers = bench.newMarkers(TURNS, 'sys');
    const ids = await bench.scriptConversations(sim, markers, 1, bench.CFG.perRound);
    const convs = await bench.openConversations(stack, users, markers);
    const tracers = [];
    for (const [name, pids] of Object.entries(bench.stackGroups(stack, infra.pg))) {
      const ps = pids().map((p) => p.pid);
      if (ps.length === 0) continue;
      const out = path.join(tmp, `${name}.txt`);
      const child = spawn('strace', ['-c', '-f', '-o', out, ...ps.flatMap((p) => ['-p', String(p)])], {
        stdio: 'ignore',
      });
      tracers.push({ name, child, out, exited: new Promise((r) => child.once('exit', r)) });
    }
    await new Promise((r) => setTimeout(r, 1500)); // every tracer attached
    let done = 0;
    for (const c of convs) if ((await c.turn()).how === 'done') done++;
    for (const t of tracers) t.child.kill('SIGINT');
    await Promise.all(tracers.map((t) => t.exited));
    for (const c of convs) c.close();
    await bench.unscript(sim, ids);
    if (done !== TURNS) throw new Error(`${TURNS - done} of ${TURNS} turns did not finish`);
    const rounds = TURNS * bench.PER_ROUND_ROUNDS;
    const result = {};
    for (const { name, out } of tracers) {
      const calls = parseSummary(fs.existsSync(out) ? fs.readFileSync(out, 'utf8') : '');
      const total = Object.values(calls).reduce((a, b) => a + b, 0);
      result[name] = {
        perRound: total / rounds,
        top: Object.entries(calls)
          .sort((a, b) => b[1] - a[1])
          .slice(0, TOP)
          .map(([call, n]) => ({ call, perRound: n / rounds })),
      };
    }
    console.log(`system calls per round (${TURNS} fresh turns of ${bench.PER_ROUND_ROUNDS} rounds, strace -c -f):`);
    const sorted = Object.entries(result).sort((a, b) => b[1].perRound - a[1].perRound);
    for (const [name, r] of sorted)
      console.log(
        `  ${name.padEnd(17)} ${r.perRound.toFixed(1).padStart(6)}  (${r.top.map((t) => `${t.call} ${t.perRound.toFixed(1)}`).join(', ')})`,
      );
    const all = sorted.reduce((a, [, r]) => a + r.perRound, 0);
    console.log(`  ${'all'.padEnd(17)} ${all.toFixed(1).padStart(6)}`);
    fs.mkdirSync(OUT, { recursive: true });
    fs.writeFileSync(
      path.join(OUT, 'syscalls.json'),
      `${JSON.stringify({ at: new Date().toISOString(), turns: TURNS, rounds, byProcess: result }, null, 2)}\n`,
    );
  } finally {
    await stack?.stop();
    await infra.admin.end().catch(() => undefined);
    await infra.pg.destroy().catch(() => undefined);
    await infra.redis.destroy().catch(() => undefined);
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
