'use strict';
// Captures the chat-completions requests of real Skald turns (the stack of turn.js, one conversation of
// one turn of 5 read_file rounds, then a second turn) from llm-sim's request log, for llm-sim.js's
// in-process A/B and the request-size figures.
//
//   node scripts/bench/sim-capture.js [--out test-results/bench/sim-requests.json]
const fs = require('node:fs');
const path = require('node:path');
const bench = require('./turn');

const ROOT = path.resolve(__dirname, '../..');
const argv = process.argv.slice(2);
const i = argv.indexOf('--out');
const OUT = path.resolve(ROOT, i >= 0 ? argv[i + 1] : 'test-results/bench/sim-requests.json');

async function main() {
  const infra = await bench.startInfra();
  process.once('exit', () => infra.stopNow());
  let stack = null;
  try {
    stack = await bench.startStack(infra);
    const { LlmSimAdminClient } = require(path.join(ROOT, 'libs/testing/dist'));
    const sim = new LlmSimAdminClient(stack.simUrl);
    const users = await bench.makeUsers(stack, 1);
    const markers = bench.newMarkers(1, 'cap');
    const ids = await bench.scriptConversations(sim, markers, 2, bench.CFG.perRound);
    const [conv] = await bench.openConversations(stack, users, markers);
    for (let t = 0; t < 2; t++) await conv.turn();
    conv.close();
    await bench.unscript(sim, ids);
    const entries = (await sim.requests()).filter((e) => e.path.includes('/chat/completions'));
    fs.mkdirSync(path.dirname(OUT), { recursive: true });
    fs.writeFileSync(
      OUT,
      JSON.stringify(
        entries.map((e) => ({ headers: e.headers, body: e.body })),
        null,
        1,
      ) + '\n',
    );
    console.log(`${entries.length} requests written to ${path.relative(ROOT, OUT)}`);
  } finally {
    await stack?.stop();
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
