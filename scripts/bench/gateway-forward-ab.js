'use strict';
// In-process A/B of the gateway's live session event path, from the NATS message to the socket's
// send: the subscription callback of build A (e.g. main's dist: decode, zod parse, deliverLive,
// JSON.stringify) and of this build (B: decode, JSON.parse, envelope check, deliverLive of the text),
// alternating, CPU µs per event (process.cpuUsage). NATS and the socket are stubs: the message is the
// bytes and headers a worker publishes; the socket's send turns the frame into bytes as `ws` does.
//
//   node scripts/bench/gateway-forward-ab.js <root of build A> [--rounds 20] [--events 20000]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const OLD = path.resolve(process.argv[2] ?? '/work/main');
const ROUNDS = arg('rounds', 20);
const EVENTS = arg('events', 20000);

const load = (root) => ({
  contracts: require(path.join(root, 'libs/contracts/dist')),
  messaging: require(path.join(root, 'libs/messaging/dist')),
  ws: require(path.join(root, 'apps/gateway/dist/ws/ws-connection')),
  fwd: (() => {
    try {
      return require(path.join(root, 'apps/gateway/dist/ws/forwarded-events'));
    } catch {
      return null;
    }
  })(),
});
const builds = { A: load(OLD), B: load(ROOT) };
const { headers: natsHeaders } = require(path.join(ROOT, 'node_modules/nats'));

const userId = randomUUID();
const sessionId = randomUUID();
const subject = `events.${userId}.${sessionId}`;
const callId = randomUUID();
const messageId = randomUUID();
// one round of the turn bench: the model's thinking, a read_file call and its result, the answer
const bodies = [
  { type: 'thinking', message_id: messageId, content: 'Let me read the file first. '.repeat(6) },
  {
    type: 'tool_start',
    tool_call_id: callId,
    message_id: messageId,
    name: 'read_file',
    arguments: { path: 'src/notes.md' },
    label_short: 'read_file src/notes.md',
    label_full: 'read_file /workspace/src/notes.md',
    path: '/workspace/src/notes.md',
  },
  { type: 'tool_done', tool_call_id: callId, result: 'line of the file\n'.repeat(60), result_type: 'text' },
  { type: 'done', message_id: messageId, stack_id: randomUUID(), content: 'The file says hello. '.repeat(20) },
];
const schema = builds.B.contracts.SessionEventSchema;
const encoder = new TextEncoder();
const message = (seq) => {
  const h = natsHeaders();
  h.set('x-skald-sent-at', String(Date.now()));
  const body = bodies[seq % bodies.length];
  return {
    subject,
    data: encoder.encode(JSON.stringify(schema.parse({ ...body, session_id: sessionId, seq }))),
    headers: h,
  };
};

/** A Bus whose NATS connection only records the subscription callback. */
function stubBus(Bus) {
  const bus = Object.create(Bus.prototype);
  let callback = null;
  bus.nc = {
    subscribe: (_p, opts) => ((callback = opts.callback), { closed: new Promise(() => undefined), unsubscribe() {} }),
  };
  bus.subs = new Set();
  bus.inflight = new Set();
  bus.log = { warn() {}, error() {} };
  return { bus, deliver: (msg) => callback(null, msg) };
}

let bytesSent = 0;
function socket() {
  return { readyState: 1, bufferedAmount: 0, send: (d) => void (bytesSent += Buffer.from(d).length), close() {} };
}

function path_(k) {
  const b = builds[k];
  const { bus, deliver } = stubBus(b.messaging.Bus);
  const conn = new b.ws.WsConnection(socket(), { actor: { userId, role: 'user' } }, 'web', () =>
    Promise.resolve({ events: [], last_seq: 0, running: false }),
  );
  conn.sessionId = sessionId;
  const fannedOut = (/** @type {string} */ _kind, /** @type {number} */ _sentAt) => undefined; // the histogram is left out of both (item 3 of the brief)
  if (typeof bus.subscribeForwarded === 'function' && b.fwd) {
    bus.subscribeForwarded(`events.${userId}.*`, b.contracts.readSessionEventEnvelope, (text, envelope, subj, meta) => {
      const e = b.fwd.forwardable(userId, subj, envelope, text);
      if (!e) return;
      conn.deliverLive(e);
      fannedOut('session', meta.sentAt);
    });
  } else {
    bus.subscribe(`events.${userId}.*`, b.contracts.SessionEventSchema, (e, _s, meta) => {
      conn.deliverLive(e);
      fannedOut('session', meta.sentAt);
    });
  }
  return { conn, deliver };
}

const paths = { A: path_('A'), B: path_('B') };
// the same bytes reach the socket
const probe = {};
for (const k of ['A', 'B']) {
  const sent = [];
  const p = path_(k);
  p.conn.ws.send = (d) => void sent.push(String(d));
  p.deliver(message(1));
  probe[k] = sent;
}
if (JSON.stringify(probe.A) !== JSON.stringify(probe.B))
  throw new Error(`A and B send different frames: ${probe.A} / ${probe.B}`);

const msgs = Array.from({ length: 64 }, (_, i) => message(i + 1));
const samples = { A: [], B: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const k of r % 2 ? ['B', 'A'] : ['A', 'B']) {
    const p = paths[k];
    const start = process.cpuUsage();
    for (let i = 0; i < EVENTS; i++) {
      const m = msgs[i % msgs.length];
      p.conn.lastSeq = i % msgs.length; // every event is the next one of its session
      p.deliver(m);
    }
    const used = process.cpuUsage(start);
    samples[k].push((used.user + used.system) / EVENTS);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `session event, NATS message -> socket send (mix of thinking/tool_start/tool_done/done, ${Math.round(
    msgs.reduce((n, m) => n + m.data.length, 0) / msgs.length,
  )} bytes avg): A ${median(samples.A).toFixed(2)} µs, B ${median(samples.B).toFixed(2)} µs per event (median of ${ROUNDS})`,
);
