#!/usr/bin/env node
'use strict';
// CPU of one streaming model call in the worker's process (libs/llm streamChat on the openai SDK),
// A/B in one process: the SDK as `new OpenAI(...)` defaults, with global fetch and
// `LLM_FETCH_OPTIONS`, and as LlmManager configures it (its node:http fetch, `createLlmHttpFetch`). Blocks of calls alternate between the two, so that the machine's load
// falls on both alike; CPU µs per call from process.cpuUsage. The server is a child process (its
// CPU is not counted) answering every request with the same short SSE stream.
//
//   npm run build && node scripts/bench/llm-call.js [--calls 4000] [--messages 30]
//
// --strace: run the client alone under `strace -f -c` and print the system calls per call.
const { spawn, spawnSync } = require('node:child_process');
const path = require('node:path');

const argv = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && argv[i + 1] !== undefined ? argv[i + 1] : dflt;
};
const CALLS = Number(opt('calls', 4000));
const MESSAGES = Number(opt('messages', 30));
const BLOCK = 50;
const WARM = 1000;
const ROOT = path.resolve(__dirname, '../..');

const SERVER = `
const http = require('http');
const chunks = [
  { choices: [{ index: 0, delta: { role: 'assistant', content: 'Reading' } }] },
  { choices: [{ index: 0, delta: { content: ' the file.' } }] },
  { choices: [{ index: 0, delta: { tool_calls: [{ index: 0, id: 'call_1', type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } }] } }] },
  { choices: [{ index: 0, delta: {}, finish_reason: 'tool_calls' }] },
  { choices: [], usage: { prompt_tokens: 100, completion_tokens: 10 } },
];
const body = chunks.map((c) => 'data: ' + JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', ...c }) + '\\n\\n').join('') + 'data: [DONE]\\n\\n';
const srv = http.createServer((req, res) => {
  req.resume();
  req.on('end', () => { res.writeHead(200, { 'content-type': 'text/event-stream' }); res.end(body); });
});
srv.keepAliveTimeout = 60000;
srv.listen(0, '127.0.0.1', () => process.send(srv.address().port));
`;

function request() {
  const messages = [{ role: 'system', content: 'You are a careful assistant. '.repeat(100) }];
  for (let i = 0; messages.length < MESSAGES; i++) {
    messages.push({ role: 'user', content: `Please read file ${i}. ${'Some words of the question. '.repeat(4)}` });
    messages.push({
      role: 'assistant',
      content: '',
      tool_calls: [
        { id: `call_${i}`, type: 'function', function: { name: 'read_file', arguments: '{"path":"a.txt"}' } },
      ],
    });
    messages.push({ role: 'tool', tool_call_id: `call_${i}`, content: 'a line of the file\n'.repeat(20) });
  }
  const tools = Array.from({ length: 12 }, (_, i) => ({
    type: 'function',
    function: {
      name: `tool_${i}`,
      description: 'Does one thing to a file of the workspace. '.repeat(3),
      parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
    },
  }));
  return { messages, tools };
}

async function client(port) {
  const OpenAI = require(path.join(ROOT, 'node_modules/openai')).default;
  const { streamChat } = require(path.join(ROOT, 'libs/llm/dist/llm-stream-chat.js'));
  const { LLM_FETCH_OPTIONS } = require(path.join(ROOT, 'libs/llm/dist/llm-manager.js'));
  const { createLlmHttpFetch } = require(path.join(ROOT, 'libs/llm/dist/llm-http-fetch.js'));
  const def = {
    name: 'bench',
    baseUrl: `http://127.0.0.1:${port}/v1`,
    model: 'm',
    apiKey: 'sk-bench',
    strength: 'medium',
    scopes: [],
    priority: 1,
    extraParams: {},
    cacheControl: false,
    headers: {},
    timeoutMs: 30_000,
    idleTimeoutMs: 30_000,
    pricing: null,
  };
  const base = { baseURL: def.baseUrl, apiKey: def.apiKey, maxRetries: 0, organization: null, project: null };
  const variants = {
    'SDK defaults': new OpenAI(base),
    'global fetch, fetchOptions': new OpenAI({ ...base, fetchOptions: LLM_FETCH_OPTIONS }),
    'LlmManager (node:http fetch)': new OpenAI({
      ...base,
      fetch: createLlmHttpFetch(),
      fetchOptions: LLM_FETCH_OPTIONS,
    }),
  };
  const req = request();
  const call = (sdk) => streamChat(sdk, def, req);
  if (process.env.LLM_CALL_ONLY) {
    const sdk = variants[process.env.LLM_CALL_ONLY];
    for (let i = 0; i < WARM + CALLS; i++) await call(sdk);
    return;
  }
  for (const sdk of Object.values(variants)) for (let i = 0; i < WARM; i++) await call(sdk); // warm-up
  const us = Object.fromEntries(Object.keys(variants).map((k) => [k, 0]));
  for (let done = 0; done < CALLS; done += BLOCK)
    for (const [name, sdk] of Object.entries(variants)) {
      const t = process.cpuUsage();
      for (let i = 0; i < BLOCK; i++) await call(sdk);
      const d = process.cpuUsage(t);
      us[name] += d.user + d.system;
    }
  console.log(`one streaming call, ${JSON.stringify(req).length} bytes of messages and tools, ${CALLS} calls each:`);
  for (const [name, total] of Object.entries(us))
    console.log(`  ${name.padEnd(28)} ${(total / CALLS).toFixed(0)} µs CPU`);
}

async function main() {
  if (process.env.LLM_CALL_PORT) return client(Number(process.env.LLM_CALL_PORT));
  const server = spawn(process.execPath, ['-e', SERVER], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const port = await new Promise((r) => server.once('message', r));
  try {
    if (argv.includes('--strace')) {
      for (const only of ['global fetch, fetchOptions', 'LlmManager (node:http fetch)']) {
        const out = path.join(require('node:os').tmpdir(), `llm-call-strace-${process.pid}.txt`);
        spawnSync('strace', ['-f', '-c', '-o', out, process.execPath, __filename, '--calls', String(CALLS)], {
          env: { ...process.env, LLM_CALL_PORT: String(port), LLM_CALL_ONLY: only },
          stdio: 'inherit',
        });
        const lines = require('node:fs').readFileSync(out, 'utf8').split('\n');
        const calls = {};
        for (const l of lines) {
          const f = l.trim().split(/\s+/);
          if (f.length >= 5 && /^\d+$/.test(f[3]) && f[f.length - 1] !== 'total') calls[f[f.length - 1]] = Number(f[3]);
        }
        const n = CALLS + WARM;
        const per = (k) => ((calls[k] ?? 0) / n).toFixed(2);
        console.log(
          `${only}: per call (${n} calls, start-up included) write ${per('write')}, writev ${per('writev')}, read ${per('read')}, epoll_pwait ${per('epoll_pwait')}, futex ${per('futex')}`,
        );
      }
    } else {
      await new Promise((resolve, reject) => {
        const c = spawn(process.execPath, [__filename, ...argv], {
          env: { ...process.env, LLM_CALL_PORT: String(port) },
          stdio: 'inherit',
        });
        c.once('exit', (code) => (code === 0 ? resolve(undefined) : reject(new Error(`client exited ${code}`))));
      });
    }
  } finally {
    server.kill();
  }
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
