import { expect } from '@jest/globals';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import pino from 'pino';
import { NatsBus } from '@skald/messaging';
import { ApiClient, Frame, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';

jest.setTimeout(180_000);

interface WireMsg {
  role: string;
  content: unknown;
  tool_calls?: Array<{ id: string; type: string; function: { name: string; arguments: string } }>;
  tool_call_id?: string;
}
interface ChatBody {
  messages: WireMsg[];
  tools?: Array<{ function: { name: string } }>;
}
interface Meta {
  name: string;
  description: string | null;
  type: string;
  instructions: string | null;
}

const agentsDir = path.join(ROOT, 'agents');
const readAgentFile = (p: string): string => readFileSync(path.join(agentsDir, p), 'utf8');
const meta = (id: string): Meta => JSON.parse(readAgentFile(`${id}/meta.json`)) as Meta;
const TASK_AGENTS = ['code-explorer', 'generalist', 'researcher', 'software-engineer'];
const ZONE = 'Pacific/Auckland';

/** The OS line as spec 000 describes it (type + version), read here independently of the worker. */
function expectedOs(): string {
  const m = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(readFileSync('/etc/os-release', 'utf8'));
  return `${m![1]} [${process.arch}]`;
}

/**
 * main's static system message, assembled by hand from the files and the spec's order: AGENT.md
 * with the shared fragment included, the task agents listed, no MCP server, `__WORKSPACE__`
 * replaced; then the inject_memory documents that exist.
 */
function expectedStatic(memory: Array<[string, string]>): string {
  const agentsList = TASK_AGENTS.map((id) => `- \`${id}\` — ${meta(id).name}: ${meta(id).description}`).join('\n');
  let text = readAgentFile('main/AGENT.md')
    .replace('<!-- include: workspace -->', readAgentFile('_shared/workspace.md').trimEnd())
    .replace('<!-- agents -->', agentsList)
    .replace('<!-- mcp -->', '(no MCP servers are configured)')
    .split('__WORKSPACE__')
    .join('/workspace')
    .trim();
  if (memory.length > 0) {
    text += `\n\nThe following memory documents are part of your instructions:\n\n${memory
      .map(([p, c]) => `<memory path="${p}">\n${c.trimEnd()}\n</memory>`)
      .join('\n\n')}`;
  }
  return text;
}

async function say(ws: WsTestClient, content: string): Promise<Frame> {
  const from = ws.frames.length;
  ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content });
  return ws.waitFor((f) => f.type === 'done' || (f.type === 'error' && f.code !== 'invalid_input'), 90_000, from);
}

describe('agents catalog, context building, compaction and slash commands end to end', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let alice: ApiClient;
  let bob: ApiClient;
  let db: DataSource;
  const sockets: WsTestClient[] = [];

  const connect = async (client: ApiClient, source: string): Promise<WsTestClient> => {
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: client.token, source });
    await ws.waitForType('turn_running');
    sockets.push(ws);
    return ws;
  };
  const command = async (client: ApiClient, source: string, content: string): Promise<string> => {
    const r = await client.post<{ command_result: { command: string; content: string } }>(`/api/${source}/messages`, {
      client_message_id: `c-${randomUUID()}`,
      content,
    });
    expect(r.status).toBe(200);
    return r.body.command_result.content;
  };
  const requestsWith = async (marker: string): Promise<ChatBody[]> =>
    (await sim.requests({ contains: marker })).filter((r) => r.status === 200).map((r) => r.body as ChatBody);

  beforeAll(async () => {
    stack = await Stack.start({
      root: ROOT,
      perApp: {
        'session-worker': {
          SKALD_TIMEZONE: ZONE,
          SKALD_COMPACTION_THRESHOLD_TOKENS: '6000',
          SKALD_CONTEXT_BUDGET_TOKENS: '8000',
        },
      },
    });
    sim = new LlmSimAdminClient(stack.simUrl);
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    alice = await admin.createUser(`alice-${randomUUID()}@skald.test`, 'correct horse battery');
    bob = await admin.createUser(`bob-${randomUUID()}@skald.test`, 'correct horse battery');
    db = await testDb();
  });

  afterAll(async () => {
    for (const ws of sockets) ws.close();
    await assertInvariantsAndClose(db);
    await stack?.stop();
  });

  it('golden: the exact messages of a request, in the order of the spec, with real inputs', async () => {
    const ws = await connect(alice, 'golden');
    const m1 = `g1-${randomUUID()}`;
    const m2 = `g2-${randomUUID()}`;
    const profile = 'Name: Alice\nPrefers metric units.\n';
    const writeArgs = { path: 'user-memory/profile.md', content: profile };
    await sim.script({
      match: m1,
      matchIn: 'last_user',
      replies: [
        { tool_calls: [{ id: 'call_golden_1', name: 'write_file', arguments: writeArgs }] },
        {
          tool_calls: [
            { id: 'call_golden_2', name: 'update_scratchpad', arguments: { key: 'project', value: 'apollo' } },
          ],
        },
        { content: 'Saved.' },
      ],
    });
    await sim.script({ match: m2, matchIn: 'last_user', replies: [{ content: 'You prefer metric units.' }] });
    const msg1 = `Remember who I am. ${m1}`;
    const msg2 = `Which units do I prefer? ${m2}`;
    expect((await say(ws, msg1)).type).toBe('done');
    const before = Date.now();
    expect(await say(ws, msg2)).toMatchObject({ type: 'done', content: 'You prefer metric units.' });
    const after = Date.now();

    const [req] = await requestsWith(m2);
    const tail = req.messages.at(-2)!;
    const expected: WireMsg[] = [
      { role: 'system', content: expectedStatic([['user-memory/profile.md', profile]]) },
      { role: 'system', content: '<scratchpad>\n  <note key="project">apollo</note>\n</scratchpad>' },
      { role: 'user', content: msg1 },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_golden_1',
            type: 'function',
            function: { name: 'write_file', arguments: JSON.stringify(writeArgs) },
          },
        ],
      },
      {
        role: 'tool',
        tool_call_id: 'call_golden_1',
        content: `Created user-memory/profile.md (${Buffer.byteLength(profile)} bytes)`,
      },
      {
        role: 'assistant',
        content: null,
        tool_calls: [
          {
            id: 'call_golden_2',
            type: 'function',
            function: { name: 'update_scratchpad', arguments: JSON.stringify({ key: 'project', value: 'apollo' }) },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'call_golden_2', content: 'Saved scratchpad note "project".' },
      { role: 'assistant', content: 'Saved.' },
      { role: 'user', content: msg2 },
      { role: 'system', content: tail.content },
      { role: 'system', content: meta('main').instructions },
    ];
    expect(req.messages).toEqual(expected);

    // The dynamic tail: memory context, then date/time in the configured zone with its IANA name, OS, working directory.
    const tailText = tail.content as string;
    const m = new RegExp(
      [
        '^Memory documents that may be relevant \\(read them with read_file for more\\):',
        // the snippet is Postgres's ts_headline of the document
        '- user-memory/profile\\.md: Name: Alice Prefers metric units',
        '',
        'Current date and time: (\\d{4}-\\d\\d-\\d\\dT\\d\\d:\\d\\d:\\d\\d)([+-]\\d\\d:\\d\\d) \\(Pacific/Auckland\\)',
        'Operating system: (.+)',
        'Working directory: /workspace \\(filesystem tools and execute_cmd resolve relative paths against it; no need to cd\\)$',
      ].join('\n'),
    ).exec(tailText);
    expect({ tail: tailText, matched: m !== null }).toEqual({ tail: tailText, matched: true });
    const [, local, offset, os] = m!;
    expect(['+12:00', '+13:00']).toContain(offset);
    const at = Date.parse(`${local}${offset}`);
    expect(at).toBeGreaterThanOrEqual(Math.floor(before / 1000) * 1000 - 1000);
    expect(at).toBeLessThanOrEqual(after + 1000);
    expect(os).toBe(expectedOs());
    // The tools offered: the built-ins and the loop's own, no sub-agent-only tool at the root.
    const names = (req.tools ?? []).map((t) => t.function.name);
    expect(names).toEqual(
      expect.arrayContaining(['read_file', 'list_agents', 'execute_task', 'ask_user_clarification']),
    );
    expect(names).not.toContain('execute_subtask');
  });

  it('list_agents and GET /api/agents return the task agents only', async () => {
    const ws = await connect(alice, 'agentlist');
    const mk = `la-${randomUUID()}`;
    await sim.script({
      match: mk,
      matchIn: 'last_user',
      replies: [{ tool_calls: [{ name: 'list_agents', arguments: {} }] }, { content: 'Listed.' }],
    });
    const from = ws.frames.length;
    await say(ws, `Which agents are there? ${mk}`);
    const toolDone = ws.frames.slice(from).find((f) => f.type === 'tool_done')!;
    const listed = JSON.parse(toolDone.result as string) as Array<{ id: string; name: string; description: string }>;
    expect(listed.map((a) => a.id)).toEqual(TASK_AGENTS);
    expect(listed[2]).toEqual({
      id: 'researcher',
      name: 'Researcher',
      description: meta('researcher').description,
      strength: 'high',
    });
    const rest = await alice.get<{ items: Array<{ id: string }> }>('/api/agents');
    expect(rest.status).toBe(200);
    expect(rest.body.items.map((a) => a.id)).toEqual(TASK_AGENTS);
  });

  it('a user overrides a built-in agent, adds an agent of their own, and only they see it', async () => {
    const main = await alice.get<{ type: string; prompt: string; origin: string; overridden: boolean }>(
      '/api/agents/main',
    );
    expect(main).toMatchObject({ status: 200, body: { type: 'chat', origin: 'builtin', overridden: false } });
    expect(main.body.prompt).toBe(readAgentFile('main/AGENT.md'));

    const put = await alice.request('PUT', '/api/agents/researcher', {
      meta: { description: 'Alice’s researcher: cites sources.' },
    });
    expect(put).toMatchObject({
      status: 200,
      body: { id: 'researcher', description: 'Alice’s researcher: cites sources.', overridden: true, strength: 'high' },
    });
    const mine = await alice.get<{ items: Array<{ id: string; description: string }> }>('/api/agents');
    expect(mine.body.items.find((a) => a.id === 'researcher')?.description).toBe('Alice’s researcher: cites sources.');
    const bobs = await bob.get<{ items: Array<{ id: string; description: string }> }>('/api/agents');
    expect(bobs.body.items.find((a) => a.id === 'researcher')?.description).toBe(meta('researcher').description);

    // bad input names the field
    expect(await alice.request('PUT', '/api/agents/researcher', { meta: { strength: 'huge' } })).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', field: 'meta.strength' } },
    });
    expect(await alice.request('PUT', '/api/agents/main', { meta: { type: 'task' } })).toMatchObject({
      status: 400,
      body: { error: { field: 'meta.type' } },
    });
    expect(await alice.request('PUT', '/api/agents/main', { prompt: 'x <!-- include: nope -->' })).toMatchObject({
      status: 400,
      body: { error: { field: 'prompt' } },
    });
    expect(await alice.request('PUT', '/api/agents/main', {})).toMatchObject({ status: 400 });
    expect(await alice.request('PUT', '/api/agents/Bad.Id', { prompt: 'x' })).toMatchObject({ status: 404 });
    expect(await alice.request('PUT', '/api/agents/nobody', { prompt: 'x' })).toMatchObject({ status: 404 });
    expect(
      await alice.request('PUT', '/api/agents/ticker', { prompt: 'x', meta: { name: 'T', type: 'system' } }),
    ).toMatchObject({ status: 400, body: { error: { field: 'meta.type' } } });

    // an agent of her own: a task agent, listed for her only
    const created = await alice.request('PUT', '/api/agents/translator', {
      prompt: 'You translate.\n\n<!-- include: task-report -->',
      meta: { name: 'Translator', type: 'task', description: 'Translates texts.' },
    });
    expect(created).toMatchObject({ status: 200, body: { origin: 'custom', type: 'task', name: 'Translator' } });
    expect((await alice.get<{ items: Array<{ id: string }> }>('/api/agents')).body.items.map((a) => a.id)).toContain(
      'translator',
    );
    expect((await bob.get('/api/agents/translator')).status).toBe(404);
    expect((await bob.request('DELETE', '/api/agents/translator/override')).status).toBe(404);
    expect((await alice.get('/api/agents/translator')).status).toBe(200);

    // the override reaches the model: alice's main prompt, bob's untouched
    await alice.request('PUT', '/api/agents/main', { prompt: 'You are Alice’s own Skald.\n\n<!-- agents -->' });
    const ws = await connect(alice, 'override');
    const mk = `ov-${randomUUID()}`;
    await sim.script({ match: mk, matchIn: 'last_user', replies: [{ content: 'hi' }] });
    await say(ws, `hello ${mk}`);
    const [req] = await requestsWith(mk);
    expect(req.messages[0].content).toBe(
      `You are Alice’s own Skald.\n\n${[
        '- `code-explorer` — Code explorer: ' + meta('code-explorer').description,
        '- `generalist` — Generalist: ' + meta('generalist').description,
        '- `researcher` — Researcher: Alice’s researcher: cites sources.',
        '- `software-engineer` — Software engineer: ' + meta('software-engineer').description,
        '- `translator` — Translator: Translates texts.',
      ].join(
        '\n',
      )}\n\nThe following memory documents are part of your instructions:\n\n<memory path="user-memory/profile.md">\nName: Alice\nPrefers metric units.\n</memory>`,
    );

    // removing the overrides brings the files back
    expect((await alice.request('DELETE', '/api/agents/main/override')).status).toBe(204);
    expect((await alice.request('DELETE', '/api/agents/researcher/override')).status).toBe(204);
    expect((await alice.request('DELETE', '/api/agents/translator/override')).status).toBe(204);
    expect((await alice.get('/api/agents/translator')).status).toBe(404);
    expect((await alice.get<{ prompt: string; overridden: boolean }>('/api/agents/main')).body).toMatchObject({
      prompt: readAgentFile('main/AGENT.md'),
      overridden: false,
    });
  });

  it('slash commands: /help lists every command, an unknown one gets the help text and never reaches the LLM', async () => {
    const help = await command(alice, 'cmds', '/help');
    for (const c of [
      '/stop',
      '/new',
      '/clear',
      '/compact',
      '/context',
      '/resettools',
      '/sethome',
      '/models',
      '/model',
      '/cost',
      '/help',
    ]) {
      expect(help).toMatch(new RegExp(`^  ${c}\\b`, 'm'));
    }
    const mk = `bogus${randomUUID().slice(0, 8)}`;
    const unknown = await command(alice, 'cmds', `/${mk} please`);
    expect(unknown).toBe(`Unknown command /${mk}.\n\n${help}`);
    const ws = await connect(alice, 'cmds');
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content: `/${mk}` });
    const r = await ws.waitFor((f) => f.type === 'command_result');
    expect(r).toMatchObject({ command: `/${mk}`, content: unknown });
    expect(await sim.requests({ contains: mk })).toEqual([]);
    const history = await alice.get<{ items: unknown[] }>('/api/cmds/messages');
    expect(history.body.items).toEqual([]);
  });

  it('/sethome is stored durably; /resettools clears the grants of the session', async () => {
    expect(await command(alice, 'phone', '/sethome')).toBe('Notifications now go to this source (phone).');
    const rows = await db.query<Array<{ home_source: string }>>(
      `SELECT home_source FROM user_settings WHERE user_id = $1`,
      [alice.user!.id],
    );
    expect(rows).toEqual([{ home_source: 'phone' }]);
    // what the notification senders ask (web until /sethome names another)
    const bus = await NatsBus.connect({ ...stack.natsClient, name: `home-${process.pid}` }, pino({ level: 'silent' }));
    try {
      const home = (user: ApiClient) =>
        bus.call('session.home_source', { actor: { userId: user.user!.id, role: 'user' } });
      expect(await home(alice)).toEqual({ source: 'phone' });
      expect(await home(bob)).toEqual({ source: 'web' });
    } finally {
      await bus.drain();
    }

    expect(await command(alice, 'phone', '/resettools')).toBe('No tool groups were active in this conversation.');
    const [{ id: sessionId }] = await db.query<Array<{ id: string }>>(
      `SELECT id FROM sessions WHERE user_id = $1 AND source = 'phone' AND is_active`,
      [alice.user!.id],
    );
    await db.query(`INSERT INTO tool_grants (session_id, group_name) VALUES ($1, 'github'), ($1, 'config')`, [
      sessionId,
    ]);
    expect(await command(alice, 'phone', '/resettools')).toBe(
      'Deactivated 2 tool groups: config, github. The agent can activate them again with activate_tools.',
    );
    expect(await db.query(`SELECT * FROM tool_grants WHERE session_id = $1`, [sessionId])).toEqual([]);

    // while a turn runs (here it waits for a human's answer) the grants stay and the command says why
    await db.query(`INSERT INTO tool_grants (session_id, group_name) VALUES ($1, 'github')`, [sessionId]);
    const mk = `rt-${randomUUID()}`;
    await sim.script({
      match: mk,
      matchIn: 'last_user',
      replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: 'true' } }] }],
    });
    const ws = await connect(alice, 'phone');
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content: mk });
    await ws.waitForType('approval_requested');
    expect(await command(alice, 'phone', '/resettools')).toBe(
      'A turn is running in this conversation. Try again when it has finished, or /stop it first.',
    );
    expect(await db.query(`SELECT group_name FROM tool_grants WHERE session_id = $1`, [sessionId])).toEqual([
      { group_name: 'github' },
    ]);
    ws.send({ type: 'message', client_message_id: `c-${randomUUID()}`, content: '/stop' });
    await ws.waitFor((f) => f.type === 'error' && f.code === 'interrupted', 20_000);
    expect(await command(alice, 'phone', '/resettools')).toBe(
      'Deactivated 1 tool group: github. The agent can activate them again with activate_tools.',
    );
  });

  it('/context reports the parts; /compact folds the older rows into a template summary; /clear empties the conversation', async () => {
    const ws = await connect(alice, 'long');
    const marks = Array.from({ length: 4 }, (_, i) => `lc${i}-${randomUUID()}`);
    for (const [i, mk] of marks.entries()) {
      await sim.script({ match: mk, matchIn: 'last_user', replies: [{ content: `answer ${i}` }] });
      await say(ws, `question ${i} ${mk}`);
    }
    const context = await command(alice, 'long', '/context');
    const lines = context.split('\n');
    expect(lines[0]).toBe('Context of this conversation (agent main), in estimated tokens:');
    expect(lines.slice(1, 9).map((l) => l.replace(/\s+\d[\d,]*(\s+\(.*\))?$/, ''))).toEqual([
      'System prompt (AGENT.md, memory files, MCP list)',
      'Scratchpad',
      'Compaction summary',
      'Conversation history',
      'Dynamic tail (memory, date/time, OS, working directory)',
      'Tail reminder',
      'Tool definitions',
      'Total',
    ]);
    expect(context).toMatch(/Conversation history\s+\d+\s+\(8 messages from 8 stored rows\)/);
    expect(context).toContain('Compaction: above 6,000 tokens at the start of a turn, keeping the last 6 messages');
    expect(context).toContain('Context budget: 8,000 tokens');

    await sim.script({
      match: 'You keep the running summary',
      replies: [{ content: '## Goal\n- answer four questions\n\n## Progress\n- questions 0 and 1 answered' }],
    });
    expect(await command(alice, 'long', '/compact')).toBe(
      'Compacted: 2 older messages folded into the summary; the last 6 are kept as they are.',
    );
    const [summaryCall] = (await sim.requests({ contains: 'You keep the running summary' })).map(
      (r) => r.body as ChatBody,
    );
    expect(summaryCall.messages[1].content).toBe(
      `Current summary:\n(none yet)\n\nMessages to fold into it (oldest first):\n[user] question 0 ${marks[0]}\n[assistant] answer 0`,
    );
    const stored = await db.query<Array<{ summary: string }>>(
      `SELECT c.summary FROM compaction_summaries c JOIN sessions s ON s.id = c.session_id WHERE s.user_id = $1 AND s.source = 'long'`,
      [alice.user!.id],
    );
    const summary = [
      '## Goal\n- answer four questions',
      '## Key facts and decisions\n- (none)',
      '## Files and resources\n- (none)',
      '## Progress\n- questions 0 and 1 answered',
      '## Open items\n- (none)',
    ].join('\n\n');
    expect(stored).toEqual([{ summary }]);

    const next = `lc4-${randomUUID()}`;
    await sim.script({ match: next, matchIn: 'last_user', replies: [{ content: 'answer 4' }] });
    await say(ws, `question 4 ${next}`);
    const [req] = await requestsWith(next);
    expect(req.messages.slice(1, 3)).toEqual([
      { role: 'system', content: `Summary of the earlier conversation (older messages were compacted):\n${summary}` },
      { role: 'user', content: `question 1 ${marks[1]}` },
    ]);
    expect(JSON.stringify(req.messages)).not.toContain(marks[0]);

    expect(await command(alice, 'long', '/clear')).toBe(
      'Cleared the conversation (10 messages): the agent starts fresh from your next message. The scratchpad and activated tools are kept; /new starts a new session.',
    );
    expect((await alice.get<{ items: unknown[] }>('/api/long/messages')).body.items).toEqual([]);
    expect(await command(alice, 'long', '/clear')).toBe('The conversation is already empty.');
    const fresh = `lc5-${randomUUID()}`;
    await sim.script({ match: fresh, matchIn: 'last_user', replies: [{ content: 'fresh' }] });
    await say(ws, `new start ${fresh}`);
    const [freshReq] = await requestsWith(fresh);
    expect(freshReq.messages.map((m) => m.role)).toEqual(['system', 'user', 'system', 'system']);
    expect((await alice.get<{ items: Array<{ content: string }> }>('/api/long/messages')).body.items).toMatchObject([
      { content: `new start ${fresh}` },
      { content: 'fresh' },
    ]);
  });

  it('compaction runs by itself at the start of a turn once the history passes the threshold', async () => {
    const ws = await connect(alice, 'auto');
    const marks = Array.from({ length: 5 }, (_, i) => `ac${i}-${randomUUID()}`);
    // the summariser's answer, whenever the worker decides to fold the oldest fact (no /compact is sent)
    await sim.script({
      match: `[user] fact 0 ${marks[0]}`,
      replies: [{ content: '## Goal\n- keep the facts\n\n## Progress\n- fact 0 recorded' }],
    });
    // five long exchanges: about 10,000 estimated tokens, well over the 6,000 threshold
    for (const [i, mk] of marks.entries()) {
      await sim.script({ match: mk, matchIn: 'last_user', replies: [{ content: `noted ${i}` }] });
      await say(ws, `fact ${i} ${mk} ${'lorem ipsum dolor sit amet '.repeat(290)}`);
    }
    const next = `ac5-${randomUUID()}`;
    await sim.script({ match: next, matchIn: 'last_user', replies: [{ content: 'still here' }] });
    await say(ws, `and now ${next}`);
    // a summary was written before a round, from the rows that are not kept, and stored once
    const summaryCalls = await sim.requests({ contains: `[user] fact 0 ${marks[0]}` });
    expect(summaryCalls.length).toBeGreaterThanOrEqual(1);
    const [req] = await requestsWith(next);
    expect(req.messages[1]).toEqual({
      role: 'system',
      content: expect.stringContaining(
        'Summary of the earlier conversation (older messages were compacted):\n## Goal\n- keep the facts',
      ),
    });
    expect(JSON.stringify(req.messages)).not.toContain(marks[0]);
    expect(JSON.stringify(req.messages)).toContain(marks[4]);
    const stored = await db.query<Array<{ n: number }>>(
      `SELECT count(*)::int AS n FROM compaction_summaries c JOIN sessions s ON s.id = c.session_id WHERE s.user_id = $1 AND s.source = 'auto'`,
      [alice.user!.id],
    );
    expect(stored).toEqual([{ n: 1 }]);
    ws.close();
  });

  it('a tool result larger than the context budget reaches the model cut, with a notice', async () => {
    const dir = path.join(stack.env.SKALD_WORKSPACES, alice.user!.id);
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    writeFileSync(path.join(dir, 'huge.log'), `${'all quiet on the western front\n'.repeat(2_500)}`);
    const ws = await connect(alice, 'budget');
    const mk = `bd-${randomUUID()}`;
    await sim.script({
      match: mk,
      matchIn: 'last_user',
      replies: [
        { tool_calls: [{ id: 'call_big', name: 'read_file', arguments: { path: 'huge.log', limit: 5000 } }] },
        { content: 'It is a long log.' },
      ],
    });
    const from = ws.frames.length;
    await say(ws, `read huge.log ${mk}`);
    const full = ws.frames.slice(from).find((f) => f.type === 'tool_done')!.result as string;
    expect(full.length).toBeGreaterThan(40_000);
    const [, second] = await requestsWith(mk);
    const tool = second.messages.find((m) => m.role === 'tool')!;
    const text = tool.content as string;
    expect(text).toMatch(
      new RegExp(
        `\\n\\[Tool result of \`read_file\` cut: it was ${full.length} chars, more than fits in the context budget of 8000 tokens; only the first \\d+ chars are shown\\.`,
      ),
    );
    expect(full.startsWith(text.slice(0, text.lastIndexOf('\n[Tool result')))).toBe(true);
    const chars = second.messages.reduce(
      (n, m) =>
        n +
        (typeof m.content === 'string' ? m.content.length : 0) +
        (m.tool_calls ?? []).reduce((k, c) => k + c.function.name.length + c.function.arguments.length, 0),
      0,
    );
    expect(Math.ceil(chars / 4)).toBeLessThanOrEqual(8000);
  });
});
