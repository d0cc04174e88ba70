'use strict';
// Benchmark of crash recovery (target 5 s): two session-worker replicas with the
// default lease settings; a turn is streaming when its driver is killed with SIGKILL; measured is
// the time from the kill to the recovered turn's `done` (the recovered LLM call answers at once).
// Uses the built dist (`npm run build` first) and a database `skald_bench_recovery` next to
// DATABASE_URL; each stack has a private NATS server.
//
//   node scripts/bench/recovery.js [--trials 5]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const i = process.argv.indexOf('--trials');
const TRIALS = i > 0 ? Number(process.argv[i + 1]) : 5;
const base = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/skald');
const URL_ = new URL('/skald_bench_recovery', base).toString();

const { freshDatabase } = require('./bench-db');
const { Stack, ApiClient, WsTestClient, LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));

async function main() {
  await freshDatabase('skald_bench_recovery');
  const stack = await Stack.start({
    root: ROOT,
    replicas: { 'session-worker': 2 },
    env: { DATABASE_URL: URL_, LOG_LEVEL: 'info' },
  });
  const times = [];
  try {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    for (let t = 0; t < TRIALS; t++) {
      const user = await admin.createUser(`bench-${randomUUID()}@skald.test`, 'correct horse battery');
      const ws = await WsTestClient.connect(stack.gatewayUrl, { token: user.token });
      const sessionId = (await ws.waitForType('hello')).session_id;
      const m = `rec-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          { content: 'slow '.repeat(400), chunkSize: 5, latency: { betweenChunksMs: 100 } },
          { content: 'recovered' },
        ],
      });
      ws.send({ type: 'message', client_message_id: m, content: `go ${m}` });
      await ws.waitForType('token_delta');
      const driver = stack
        .byName('session-worker')
        .find(
          (w) => w.child.exitCode === null && w.logs.some((l) => l.includes(sessionId) && l.includes('"turn started"')),
        );
      const killedAt = Date.now();
      driver.child.kill('SIGKILL');
      await ws.waitFor((f) => f.type === 'done', 60_000);
      times.push(Date.now() - killedAt);
      ws.close();
      await stack.addReplica('session-worker');
    }
  } finally {
    await stack.stop();
  }
  times.sort((a, b) => a - b);
  const median = times[Math.floor(times.length / 2)];
  console.log(
    `crash recovery (kill -9 mid-stream → done on another replica), ${TRIALS} trials: median ${(median / 1000).toFixed(2)} s, ` +
      `min ${(times[0] / 1000).toFixed(2)} s, max ${(times[times.length - 1] / 1000).toFixed(2)} s (target 5 s: ${median <= 5000 ? 'met' : 'NOT met'})`,
  );
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
