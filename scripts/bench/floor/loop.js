'use strict';
// The durable floor of the turn benchmark: the least a durable agent loop must do, by hand, in one
// process. Each message is appended to Postgres before the next step (the user's, the model's, each
// tool result), the model is the same llm-sim through the same `openai` client (streaming), and the
// tool is trivial (`read_file` of one small file). A crash loses nothing acknowledged: what is not
// in the table was never acted on. Nothing more: no lease, no events table, no approval, no sandbox.
//
// Driven by scripts/bench/turn.js: the phase comes as JSON in argv[2]; the process prints `ready`
// once connected, waits for a line on stdin (the parent reads /proc between the two), runs the phase
// and prints one JSON line with its figures.
const fs = require('node:fs/promises');
const path = require('node:path');
const readline = require('node:readline');
const { randomUUID } = require('node:crypto');

const ROOT = path.resolve(__dirname, '../../..');
const { Pool } = require(path.join(ROOT, 'node_modules/pg'));
const { default: OpenAI } = require(path.join(ROOT, 'node_modules/openai'));

const phase = JSON.parse(process.argv[2]);
const pool = new Pool({ connectionString: phase.databaseUrl, max: phase.poolSize ?? 5 });
const openai = new OpenAI({ baseURL: phase.simUrl, apiKey: 'sk-bench', maxRetries: 0 });
const TOOLS = [
  {
    type: 'function',
    function: {
      name: 'read_file',
      description: 'Read a file of the workspace.',
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  },
];
const MAX_ROUNDS = 50;

/** Appends one message of a conversation (autocommit: durable when the INSERT returns). */
async function append(conversationId, message) {
  await pool.query('INSERT INTO floor_messages (conversation_id, role, body) VALUES ($1, $2, $3)', [
    conversationId,
    message.role,
    JSON.stringify(message),
  ]);
}

/** One streamed model call: the assistant message (content and tool calls). */
async function callModel(history) {
  const stream = await openai.chat.completions.create({
    model: 'sim-model',
    messages: history,
    tools: TOOLS,
    stream: true,
    stream_options: { include_usage: true },
  });
  let content = '';
  const calls = [];
  for await (const chunk of stream) {
    const delta = chunk.choices[0]?.delta;
    if (!delta) continue;
    if (delta.content) content += delta.content;
    for (const tc of delta.tool_calls ?? []) {
      const c = (calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
      if (tc.id) c.id = tc.id;
      if (tc.function?.name) c.function.name += tc.function.name;
      if (tc.function?.arguments) c.function.arguments += tc.function.arguments;
    }
  }
  return calls.length > 0 ? { role: 'assistant', content, tool_calls: calls } : { role: 'assistant', content };
}

/** The trivial tool: reads the named file of the workspace. */
async function runTool(call) {
  try {
    const args = JSON.parse(call.function.arguments);
    return await fs.readFile(path.join(phase.workspace, path.basename(String(args.path))), 'utf8');
  } catch (e) {
    return `Error: ${e.message}`;
  }
}

/** One turn: the user's message, then rounds until the model answers without tool calls. */
async function turn(conv, text) {
  const user = { role: 'user', content: text };
  await append(conv.id, user);
  conv.history.push(user);
  for (let round = 0; round < MAX_ROUNDS; round++) {
    const assistant = await callModel(conv.history);
    await append(conv.id, assistant);
    conv.history.push(assistant);
    if (!assistant.tool_calls) return;
    for (const call of assistant.tool_calls) {
      const result = { role: 'tool', tool_call_id: call.id, content: await runTool(call) };
      await append(conv.id, result);
      conv.history.push(result);
    }
  }
  throw new Error('the model did not stop calling tools');
}

const newConv = (marker) => ({ id: randomUUID(), marker, history: [] });
const say = (text, marker, n) => `${text} ${marker} #${n}`;

/** `sequential`: each conversation's turns one after the other, conversations one after the other. */
async function sequential() {
  const turns = [];
  for (const marker of phase.markers) {
    const conv = newConv(marker);
    for (let n = 0; n < phase.turns; n++) {
      const t0 = performance.now();
      await turn(conv, say('read it', marker, n));
      turns.push(performance.now() - t0);
    }
  }
  return { turnMs: turns };
}

/** `throughput`: every conversation at once, `turns` turns each; turns/s over the whole phase. */
async function throughput() {
  const t0 = performance.now();
  let done = 0;
  let errors = 0;
  await Promise.all(
    phase.markers.map(async (marker) => {
      const conv = newConv(marker);
      for (let n = 0; n < phase.turns; n++) {
        try {
          await turn(conv, say('read it', marker, n));
          done++;
        } catch {
          errors++;
          return;
        }
      }
    }),
  );
  return { turns: done, seconds: (performance.now() - t0) / 1000, errors };
}

async function main() {
  await pool.query('SELECT 1');
  // As many warm-up turns as Skald's (turn.js CFG.warmTurns), in one conversation.
  const warm = newConv(phase.warmupMarker);
  for (let n = 0; n < (phase.warmupTurns ?? 1); n++) await turn(warm, say('warm up', phase.warmupMarker, n));
  process.stdout.write('ready\n');
  const rl = readline.createInterface({ input: process.stdin });
  await new Promise((resolve) => rl.once('line', resolve));
  rl.close();
  const out = phase.kind === 'throughput' ? await throughput() : await sequential();
  process.stdout.write(`${JSON.stringify(out)}\n`);
  await pool.end();
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e);
    process.exit(1);
  },
);
