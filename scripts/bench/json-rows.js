#!/usr/bin/env node
'use strict';
// CPU µs per `jsonRows` (the start read's and each commit's JSON aggregates, through the text
// codec) on a conversation's messages: the deep decode of every row (the old path) against
// `parseJsonText` (decoded only when the mark may be in the text), alternating blocks.
// Needs `npm run build`.
//
//   node scripts/bench/json-rows.js [--blocks 20] [--per 300] [--messages 40]
const path = require('node:path');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../..');
const { decodeRow } = require(path.join(ROOT, 'libs/persistence/dist'));
const { jsonRows } = require(path.join(ROOT, 'apps/session-worker/dist/loop-adapters/session-store/turn-start'));

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 ? Number(argv[i + 1]) : dflt;
};
const BLOCKS = opt('blocks', 20);
const PER = opt('per', 300);
const N = opt('messages', 40);

/** The old jsonRows (main before this change). */
function oldJsonRows(text, timestamps = []) {
  const rows = JSON.parse(typeof text === 'string' ? text : '[]');
  return rows.map((r) => {
    const out = { ...r };
    for (const c of timestamps) if (out[c] !== null && out[c] !== undefined) out[c] = new Date(out[c]);
    return decodeRow(out);
  });
}

const sid = randomUUID();
const fid = randomUUID();
const rows = [];
for (let i = 0; i < N; i++)
  rows.push({
    id: randomUUID(),
    session_id: sid,
    frame_id: fid,
    role: ['user', 'assistant', 'tool'][i % 3],
    content: `message ${i}: ${'some words of a conversation '.repeat(6)}`,
    reasoning: null,
    is_synthetic: false,
    status: 'ok',
    metadata: i % 3 === 0 ? { attachments: [] } : null,
    client_message_id: i % 3 === 0 ? `c${i}` : null,
    input_tokens: 800 + i,
    output_tokens: 30,
    epoch: 3,
    created_at: new Date(1_700_000_000_000 + i * 1000).toISOString(),
    ord: i + 1,
    cost_usd: null,
    tokens_estimated: false,
    llm_client: 'sim',
    llm_model: 'sim-1',
  });
const text = JSON.stringify(rows);

if (JSON.stringify(oldJsonRows(text, ['created_at'])) !== JSON.stringify(jsonRows(text, ['created_at'])))
  throw new Error('old and new differ');
const block = (f) => {
  const t0 = process.cpuUsage();
  for (let i = 0; i < PER; i++) f(text, ['created_at']);
  const d = process.cpuUsage(t0);
  return (d.user + d.system) / PER;
};
block(oldJsonRows);
block(jsonRows);
const res = { old: [], new: [] };
for (let b = 0; b < BLOCKS; b++) {
  const order = [
    ['old', oldJsonRows],
    ['new', jsonRows],
  ];
  if (b % 2) order.reverse();
  for (const [k, f] of order) res[k].push(block(f));
}
const med = (a) => [...a].sort((x, y) => x - y)[Math.floor(a.length / 2)];
console.log(`jsonRows of ${N} messages (${text.length} B of JSON), ${BLOCKS} blocks × ${PER} each way, alternating`);
console.log(`  deep decode of every row (old): median ${med(res.old).toFixed(1)} CPU µs per call`);
console.log(`  parseJsonText (new):            median ${med(res.new).toFixed(1)} CPU µs per call`);
