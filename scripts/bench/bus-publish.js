#!/usr/bin/env node
'use strict';
// CPU µs per `Bus.publish` of the events a tool round announces, in process, the sender checking
// what it sends (`checkOutgoing: true`, the old path and tests' default) and not (production's
// default), alternating blocks on two connections to the same NATS server so that load drifts
// alike on both. Needs `npm run build` (it runs libs/messaging/dist) and NATS on NATS_URL.
//
//   node scripts/bench/bus-publish.js [--blocks 20] [--per 2000]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const { Bus } = require(path.join(ROOT, 'libs/messaging/dist'));
const { SessionEventSchema, EphemeralEventSchema } = require(path.join(ROOT, 'libs/contracts/dist'));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};
const BLOCKS = opt('blocks', 20);
const PER = opt('per', 2000);
const NATS_URL = process.env.NATS_URL ?? 'nats://127.0.0.1:4222';
const log = { warn: () => undefined, error: () => undefined };

const sid = randomUUID();
const call = randomUUID();
const msg = randomUUID();
/** What a read_file round announces: the model's thinking, the call's start and end, a token delta. */
const ROUND = [
  [
    SessionEventSchema,
    { type: 'thinking', session_id: sid, seq: 2, message_id: msg, content: '', input_tokens: 812, output_tokens: 31 },
  ],
  [
    SessionEventSchema,
    {
      type: 'tool_start',
      session_id: sid,
      seq: 3,
      tool_call_id: call,
      message_id: msg,
      name: 'read_file',
      arguments: { path: 'notes.txt' },
      label_short: 'Read notes.txt',
      label_full: 'Read /workspace/notes.txt',
      path: 'notes.txt',
    },
  ],
  [
    SessionEventSchema,
    {
      type: 'tool_done',
      session_id: sid,
      seq: 4,
      tool_call_id: call,
      result: 'line one\nline two\n'.repeat(8),
      result_type: 'text',
    },
  ],
  [EphemeralEventSchema, { type: 'token_delta', session_id: sid, message_id: msg, kind: 'content', delta: 'Done' }],
];

async function main() {
  const on = await Bus.connect({ servers: NATS_URL, name: `ab-check-${process.pid}`, checkOutgoing: true }, log);
  const off = await Bus.connect({ servers: NATS_URL, name: `ab-plain-${process.pid}`, checkOutgoing: false }, log);
  const subject = `bench.bus-publish.${randomUUID()}`;
  const block = async (bus) => {
    const t0 = process.cpuUsage();
    for (let i = 0; i < PER; i++) {
      const [schema, m] = ROUND[i % ROUND.length];
      bus.publish(subject, schema, m);
      // a pass of the event loop every round's worth, as the worker's publishes are spread
      if (i % ROUND.length === ROUND.length - 1) await new Promise((r) => setImmediate(r));
    }
    await bus.nc.flush();
    const d = process.cpuUsage(t0);
    return (d.user + d.system) / PER;
  };
  // warm both paths
  await block(on);
  await block(off);
  const res = { on: [], off: [] };
  for (let b = 0; b < BLOCKS; b++) {
    for (const [k, bus] of b % 2
      ? [
          ['off', off],
          ['on', on],
        ]
      : [
          ['on', on],
          ['off', off],
        ])
      res[k].push(await block(bus));
  }
  const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
  const mean = (a) => a.reduce((s, x) => s + x, 0) / a.length;
  console.log(
    `Bus.publish, ${BLOCKS} blocks × ${PER} publishes each way, alternating (CPU µs per publish, flush included)`,
  );
  console.log(`  sender checks (old):  median ${med(res.on).toFixed(2)}  mean ${mean(res.on).toFixed(2)}`);
  console.log(`  sender does not:      median ${med(res.off).toFixed(2)}  mean ${mean(res.off).toFixed(2)}`);
  await Promise.all([on.drain(), off.drain()]);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
