import { dynamicTail, projectMessages, type ProjectionInput } from './projection';
import { FakeMemory, LoopHarness } from './testing';
import type { MessageRow, ToolCallRow, ToolCallStatus } from './types';

let n = 0;
function row(role: MessageRow['role'], content: string, extra: Partial<MessageRow> = {}): MessageRow {
  n += 1;
  return {
    id: `m${n}`,
    sessionId: 's',
    frameId: 'f',
    role,
    content,
    reasoningContent: null,
    status: 'ok',
    isSynthetic: false,
    attachments: null,
    clientMessageId: null,
    inputTokens: null,
    outputTokens: null,
    createdAt: '2026-01-01T00:00:00Z',
    ...extra,
  };
}

function call(
  message: MessageRow,
  index: number,
  status: ToolCallStatus,
  result: string | null,
  name = 'read_file',
): ToolCallRow {
  return {
    id: `${message.id}-t${index}`,
    sessionId: 's',
    frameId: 'f',
    messageId: message.id,
    index,
    llmCallId: `${message.id}_call${index}`,
    name,
    argumentsText: '{}',
    status,
    result,
    resultType: null,
    requestId: null,
    childFrameId: null,
  };
}

function input(partial: Partial<ProjectionInput>): ProjectionInput {
  return {
    systemPrompt: 'SYSTEM',
    substitutions: {},
    cacheControl: false,
    scratchpad: [],
    compactionSummary: null,
    messages: [],
    toolCalls: [],
    maxHistoryMessages: null,
    maxToolResultChars: null,
    dynamicTail: null,
    tailReminder: null,
    ...partial,
  };
}

describe('projection', () => {
  it('orders static system (with __KEY__ substitutions) → scratchpad → compaction summary → history → dynamic tail → tail reminder', () => {
    const out = projectMessages(
      input({
        systemPrompt: 'You help __USER__ in __PLACE__.',
        substitutions: { USER: 'Ada', PLACE: 'Rome' },
        scratchpad: [{ key: 'db_url', value: 'postgres://localhost/mydb' }],
        compactionSummary: 'Earlier we set up the repo.',
        messages: [row('user', 'hi')],
        dynamicTail: 'TAIL',
        tailReminder: 'REMINDER',
      }),
    );
    expect(out).toEqual([
      { role: 'system', content: 'You help Ada in Rome.' },
      { role: 'system', content: '<scratchpad>\n  <note key="db_url">postgres://localhost/mydb</note>\n</scratchpad>' },
      {
        role: 'system',
        content: 'Summary of the earlier conversation (older messages were compacted):\nEarlier we set up the repo.',
      },
      { role: 'user', content: 'hi' },
      { role: 'system', content: 'TAIL' },
      { role: 'system', content: 'REMINDER' },
    ]);
  });

  it('the dynamic tail holds memory context, date/time with the IANA zone, OS and working directory', () => {
    const text = dynamicTail({
      memoryContext: 'User likes tea.',
      extraPrompts: ['Be brief.'],
      now: new Date('2026-06-17T20:20:00Z'),
      timeZone: 'Europe/Rome',
      os: 'Linux 6.8',
      workingDirectory: '/workspace/proj',
    });
    expect(text).toBe(
      [
        'User likes tea.',
        'Be brief.',
        'Current date and time: 2026-06-17T22:20:00+02:00 (Europe/Rome)\nOperating system: Linux 6.8\nWorking directory: /workspace/proj (filesystem tools and execute_cmd resolve relative paths against it; no need to cd)',
      ].join('\n\n'),
    );
    expect(
      dynamicTail({
        memoryContext: null,
        extraPrompts: [],
        now: new Date('2026-01-15T12:00:00Z'),
        timeZone: 'America/New_York',
        os: 'Linux',
        workingDirectory: null,
      }),
    ).toBe('Current date and time: 2026-01-15T07:00:00-05:00 (America/New_York)\nOperating system: Linux');
  });

  it('the live loop puts memory context and the run context prompt in the tail after the history', async () => {
    const h = new LoopHarness({
      session: { runContext: { workingDirectory: '/workspace/p', systemPrompt: ['Only touch src/.'] } },
      script: [{ content: 'ok' }],
    });
    h.deps.memory = new FakeMemory('Remembered: likes tea.');
    await h.run('hello');
    const msgs = h.model.calls[0].messages;
    expect(msgs.map((m) => m.role)).toEqual(['system', 'user', 'system']);
    const tail = msgs[2].content as string;
    expect(
      tail.startsWith(
        'Remembered: likes tea.\n\nOnly touch src/.\n\nCurrent date and time: 2026-06-17T22:20:00+02:00 (Europe/Rome)',
      ),
    ).toBe(true);
    expect(tail).toContain('Working directory: /workspace/p');
  });

  it("says the root frame's memory query before its agent loads: the text the context is then asked with", async () => {
    const h = new LoopHarness({ script: [{ content: 'ok' }] });
    const memory = new FakeMemory('Remembered: likes tea.');
    const order: string[] = [];
    h.deps.memory = {
      expectQuery: (sessionId, text) => (order.push(`expect ${text}`), memory.expectQuery(sessionId, text)),
      queryContext: (sessionId, text) => (order.push(`query ${text}`), memory.queryContext(sessionId, text)),
    };
    const catalog = h.deps.catalog;
    h.deps.catalog = {
      getAgent: (agentId, userId) => (order.push(`agent ${agentId}`), catalog.getAgent(agentId, userId)),
      listTaskAgents: (userId) => catalog.listTaskAgents(userId),
    };
    await h.run('What tea do I like?');
    expect(order.slice(0, 3)).toEqual([
      'expect What tea do I like?',
      expect.stringMatching(/^agent /),
      'query What tea do I like?',
    ]);
    expect(memory.expected).toEqual(['What tea do I like?']);
  });

  it('shows the default working directory when the session sets none', async () => {
    const h = new LoopHarness({ config: { defaultWorkingDirectory: '/workspace' }, script: [{ content: 'ok' }] });
    await h.run('hello');
    expect(h.model.calls[0].messages.at(-1)?.content).toContain(
      'Working directory: /workspace (filesystem tools and execute_cmd resolve relative paths against it; no need to cd)',
    );
  });

  it('truncates history to maxHistoryMessages (oldest first) only when compaction is off', () => {
    const rows = [row('user', 'u1'), row('assistant', 'a1'), row('user', 'u2'), row('assistant', 'a2')];
    const truncated = projectMessages(input({ messages: rows, maxHistoryMessages: 2 }));
    expect(truncated.slice(1).map((m) => m.content)).toEqual(['u2', 'a2']);
    const whole = projectMessages(input({ messages: rows, maxHistoryMessages: null }));
    expect(whole).toHaveLength(5);
  });

  it('coalesces consecutive user/agent rows into one user message and adds the attachment block on the fly', () => {
    const withFile = row('user', 'see file', { attachments: [{ path: '/workspace/uploads/a.png', name: 'a.png' }] });
    const out = projectMessages(input({ messages: [row('user', 'first'), withFile, row('agent', 'from agent')] }));
    const text =
      'first\n\nsee file\n\n[SYSTEM INFO] The user attached a file:\n- /workspace/uploads/a.png\n\nfrom agent';
    // The image is a reference here: before each call the loop makes it an image (vision) or drops it.
    expect(out[1]).toEqual({
      role: 'user',
      content: [
        { type: 'text', text },
        { type: 'image_ref', path: '/workspace/uploads/a.png' },
      ],
    });
    expect(withFile.content).toBe('see file');
    const doc = row('user', 'see doc', { attachments: [{ path: '/workspace/uploads/a.pdf', name: 'a.pdf' }] });
    expect(projectMessages(input({ messages: [doc] }))[1]).toEqual({
      role: 'user',
      content:
        'see doc\n\n[SYSTEM INFO] The user attached a file:\n- /workspace/uploads/a.pdf (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)',
    });
  });

  it('excludes failed rows', () => {
    const out = projectMessages(
      input({ messages: [row('user', 'orphan', { status: 'failed' }), row('user', 'real')] }),
    );
    expect(out[1]).toEqual({ role: 'user', content: 'real' });
  });

  it('derives the tool-result content from the call status exactly as ARCHITECTURE.md gives it', () => {
    const a = row('assistant', '');
    const statuses: [ToolCallStatus, string | null][] = [
      ['done', 'the result'],
      ['failed', 'disk full'],
      ['rejected', 'User rejected this tool call. Reason: no'],
      ['cancelled', 'Cancelled by user.'],
      ['pending', null],
      ['awaiting_human', null],
      ['interrupted', null],
      ['running', null],
    ];
    const calls = statuses.map(([s, r], i) => call(a, i, s, r));
    const out = projectMessages(input({ messages: [row('user', 'go'), a], toolCalls: calls }));
    expect(out[2]).toMatchObject({ role: 'assistant', content: null });
    expect(out.slice(3).map((m) => m.content)).toEqual([
      'the result',
      'Error: disk full',
      'User rejected this tool call. Reason: no',
      'Cancelled by user.',
      'Error: tool call was interrupted (connection lost before user approval). Please retry the operation.',
      'Error: tool call was interrupted (connection lost before user approval). Please retry the operation.',
      'Error: tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.',
      'Error: tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.',
    ]);
  });

  it('an interrupted call with a stored detail reaches the model as an error (ARCHITECTURE.md: Error: prefix)', () => {
    const a = row('assistant', '');
    const detail =
      'the tool runner stopped answering while running this call (no sign of life for 5 s); it may or may not have taken effect. Check the current state before retrying.';
    const out = projectMessages(
      input({ messages: [row('user', 'go'), a], toolCalls: [call(a, 0, 'interrupted', detail)] }),
    );
    expect(out[3].content).toBe(`Error: ${detail}`);
  });

  it('hides long tool results of previous turns only, with the exact placeholder, leaving the rows unchanged', () => {
    const big = 'x'.repeat(50);
    const old = row('assistant', 'checking');
    const current = row('assistant', '');
    const oldCall = call(old, 0, 'done', big, 'read_file');
    const currentCall = call(current, 0, 'done', big, 'grep_files');
    const out = projectMessages(
      input({
        messages: [row('user', 'turn 1'), old, row('assistant', 'answer 1'), row('user', 'turn 2'), current],
        toolCalls: [oldCall, currentCall],
        maxToolResultChars: 20,
      }),
    );
    const tools = out.filter((m) => m.role === 'tool');
    expect(tools.map((m) => m.content)).toEqual([
      '[Tool response for `read_file` hidden: response was 50 chars, exceeding the 20-char limit. Call the tool again if you need this information.]',
      big,
    ]);
    expect(oldCall.result).toBe(big);
  });

  it('never hides when no limit is set, nor results at or under the limit', () => {
    const old = row('assistant', '');
    const c = call(old, 0, 'done', 'x'.repeat(20));
    const rows = [row('user', '1'), old, row('user', '2')];
    for (const limit of [null, 20]) {
      const out = projectMessages(input({ messages: rows, toolCalls: [c], maxToolResultChars: limit }));
      expect(out.find((m) => m.role === 'tool')?.content).toBe('x'.repeat(20));
    }
  });

  it('wraps the static prompt in a cache_control block for caching clients', () => {
    const out = projectMessages(input({ cacheControl: true }));
    expect(out[0]).toEqual({
      role: 'system',
      content: [{ type: 'text', text: 'SYSTEM', cache_control: { type: 'ephemeral' } }],
    });
  });
});

describe('tool-result hiding in the live loop', () => {
  it('hides a previous turn’s long result from the model, shows the current turn’s in full, and keeps the stored row intact', async () => {
    const long = 'L'.repeat(100);
    const h = new LoopHarness({
      config: { maxToolResultChars: 50 },
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: long }) }],
      script: [
        { toolCalls: [{ name: 'read_file', arguments: { path: 'big' } }] },
        { content: 'read it' },
        { content: 'second turn' },
      ],
    });
    await h.run('turn 1');
    expect(h.model.calls[1].messages).toContainEqual({ role: 'tool', tool_call_id: 'call_1', content: long });
    await h.run('turn 2');
    expect(h.model.calls[2].messages).toContainEqual({
      role: 'tool',
      tool_call_id: 'call_1',
      content:
        '[Tool response for `read_file` hidden: response was 100 chars, exceeding the 50-char limit. Call the tool again if you need this information.]',
    });
    expect(h.toolCalls()[0].result).toBe(long);
  });
});
