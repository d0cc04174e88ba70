'use strict';
// Benchmark of a lost dependency (target 10 s): how long a call waits when the tool runner running
// it is killed with SIGKILL (measured from the kill to the call's `tool_error`), and when the
// approval service does not answer (SIGSTOP; measured from the call's `tool_start` to its
// `tool_error`). In both the turn then goes on to `done`. Uses the built dist (`npm run build`
// first) and a database `skald_bench_dependencies` next to DATABASE_URL; the stack has a private
// NATS server.
//
//   node scripts/bench/dependency-recovery.js [--trials 3]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const i = process.argv.indexOf('--trials');
const TRIALS = i > 0 ? Number(process.argv[i + 1]) : 3;
const TARGET_MS = 10_000;

const { freshDatabase } = require('./bench-db');
const { Stack, ApiClient, WsTestClient, LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));

async function turn(stack, sim, admin, command) {
  const user = await admin.createUser(`bench-${randomUUID()}@skald.test`, 'correct horse battery');
  const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token });
  await ws.waitForType('hello');
  const m = `dep-${randomUUID()}`;
  await sim.script({
    match: m,
    replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command, timeout: 120 } }] }, { content: 'went on' }],
  });
  ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
  return ws;
}

async function approve(ws) {
  const card = await ws.waitFor((f) => f.type === 'approval_required' || f.type === 'pending_write', 30_000);
  ws.send({ type: 'approve_tool', request_id: card.request_id });
}

function summary(label, times) {
  const sorted = [...times].sort((a, b) => a - b);
  const median = sorted[Math.floor(sorted.length / 2)];
  return (
    `${label}, ${sorted.length} trials: median ${(median / 1000).toFixed(2)} s, min ${(sorted[0] / 1000).toFixed(2)} s, ` +
    `max ${(sorted[sorted.length - 1] / 1000).toFixed(2)} s (target ${TARGET_MS / 1000} s: ${sorted[sorted.length - 1] <= TARGET_MS ? 'met' : 'NOT met'})`
  );
}

async function main() {
  const url = await freshDatabase('skald_bench_dependencies');
  const stack = await Stack.start({ root: ROOT, env: { DATABASE_URL: url, LOG_LEVEL: 'warn' } });
  const runner = [];
  const approval = [];
  try {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    for (let t = 0; t < TRIALS; t++) {
      const ws = await turn(stack, sim, admin, 'echo started; sleep 60');
      await approve(ws);
      await ws.waitForType('tool_progress', 30_000);
      const proc = stack.byName('tool-runner').find((p) => p.child.exitCode === null && p.child.signalCode === null);
      const killedAt = Date.now();
      proc.child.kill('SIGKILL');
      await ws.waitForType('tool_error', 120_000);
      runner.push(Date.now() - killedAt);
      await ws.waitFor((f) => f.type === 'done', 30_000);
      ws.close();
      await stack.addReplica('tool-runner');
    }
    const service = stack.byName('approval-service')[0];
    for (let t = 0; t < TRIALS; t++) {
      service.child.kill('SIGSTOP');
      try {
        const ws = await turn(stack, sim, admin, 'echo never');
        await ws.waitForType('tool_start', 60_000);
        const startedAt = Date.now();
        await ws.waitForType('tool_error', 120_000);
        approval.push(Date.now() - startedAt);
        await ws.waitFor((f) => f.type === 'done', 60_000);
        ws.close();
      } finally {
        service.child.kill('SIGCONT');
      }
    }
  } finally {
    await stack.stop();
  }
  console.log(summary('tool runner killed mid-command (SIGKILL → the call ends interrupted)', runner));
  console.log(summary('approval service not answering (SIGSTOP; tool_start → the call ends failed)', approval));
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
