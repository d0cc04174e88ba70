import { describeContext } from './maintenance';
import { MIN_CUT_RESULT_CHARS, projectMessages, type ProjectionInput } from './projection';
import { agent, FakeMemory, LoopHarness } from './testing';
import { cutToolResult } from './texts';
import { estimateTokens } from './tokens';
import type { MessageRow, ToolCallRow } from './types';

const base = { sessionId: 's', frameId: 'f', reasoningContent: null, status: 'ok' as const, isSynthetic: false };
const msg = (id: string, role: MessageRow['role'], content: string): MessageRow => ({
  ...base,
  id,
  role,
  content,
  attachments: null,
  clientMessageId: null,
  inputTokens: null,
  outputTokens: null,
  createdAt: '2026-01-01T00:00:00Z',
});
const toolCall = (messageId: string, index: number, result: string, name = 'read_file'): ToolCallRow => ({
  id: `${messageId}-${index}`,
  sessionId: 's',
  frameId: 'f',
  messageId,
  index,
  llmCallId: `call_${messageId}_${index}`,
  name,
  argumentsText: '{}',
  status: 'done',
  result,
  resultType: null,
  requestId: null,
  childFrameId: null,
});

function input(partial: Partial<ProjectionInput>): ProjectionInput {
  return {
    systemPrompt: 'SYSTEM',
    substitutions: {},
    cacheControl: false,
    scratchpad: [],
    compactionSummary: null,
    messages: [msg('u1', 'user', 'read it'), msg('a1', 'assistant', '')],
    toolCalls: [],
    maxHistoryMessages: null,
    maxToolResultChars: null,
    dynamicTail: null,
    tailReminder: null,
    ...partial,
  };
}

describe('context budget', () => {
  it('a single tool result larger than the budget is cut with a notice, and the request fits', () => {
    const huge = 'x'.repeat(40_000);
    const out = projectMessages(
      input({ toolCalls: [toolCall('a1', 0, huge, 'read_file')], contextBudgetTokens: 2_000 }),
    );
    const tool = out.find((m) => m.role === 'tool')!;
    expect(tool.content).toMatch(/^x+\n\[Tool result of `read_file` cut: it was 40000 chars/);
    const kept = tool.content.indexOf('\n');
    expect(tool.content).toBe(`${'x'.repeat(kept)}\n${cutToolResult('read_file', 40_000, kept, 2_000)}`);
    expect(estimateTokens(out)).toBeLessThanOrEqual(2_000);
  });

  it('cuts the largest results first and leaves the small ones and everything else alone', () => {
    const out = projectMessages(
      input({
        toolCalls: [toolCall('a1', 0, 'small result'), toolCall('a1', 1, 'y'.repeat(12_000), 'grep_files')],
        contextBudgetTokens: 1_500,
      }),
    );
    const tools = out.filter((m) => m.role === 'tool');
    expect(tools[0].content).toBe('small result');
    expect(tools[1].content).toContain('[Tool result of `grep_files` cut: it was 12000 chars');
    expect(out[0]).toEqual({ role: 'system', content: 'SYSTEM' });
    expect(estimateTokens(out)).toBeLessThanOrEqual(1_500);
  });

  it('never cuts below the minimum, and does nothing when the messages fit or there is no budget', () => {
    const big = 'z'.repeat(5_000);
    const tiny = projectMessages(input({ toolCalls: [toolCall('a1', 0, big)], contextBudgetTokens: 10 }));
    const cut = tiny.find((m) => m.role === 'tool')!.content;
    expect(cut.startsWith(`${'z'.repeat(MIN_CUT_RESULT_CHARS)}\n[Tool result`)).toBe(true);
    for (const budget of [100_000, null]) {
      const out = projectMessages(input({ toolCalls: [toolCall('a1', 0, big)], contextBudgetTokens: budget }));
      expect(out.find((m) => m.role === 'tool')!.content).toBe(big);
    }
  });

  it('applies in a live turn: the model sees the cut result, the store keeps it whole', async () => {
    const h = new LoopHarness({
      config: { contextBudgetTokens: 1_000 },
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: 'w'.repeat(20_000) }) }],
      script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'big.log' } }] }, { content: 'It is big.' }],
    });
    await h.run('read big.log');
    const tool = h.model.calls[1].messages.find((m) => m.role === 'tool')!;
    expect(tool.content).toContain('[Tool result of `read_file` cut: it was 20000 chars');
    expect(h.toolCalls()[0].result).toHaveLength(20_000);
  });
});

describe('describeContext (/context)', () => {
  it('measures every part of the next request in the order it is sent', async () => {
    const h = new LoopHarness({
      config: { compaction: { thresholdTokens: 50_000, keepRecent: 6, strength: null }, contextBudgetTokens: 80_000 },
      agents: [agent({ id: 'main', type: 'chat', prompt: 'P'.repeat(400), tailReminder: 'Be brief.' })],
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: 'r' }) }],
      script: [{ content: 'a'.repeat(80) }],
    });
    h.deps.memory = new FakeMemory('remember: tea');
    const empty = await describeContext(h.deps, { sessionId: h.sessionId });
    expect(empty.parts.find((p) => p.part === 'history')).toEqual({ part: 'history', messages: 0, tokens: 0 });
    await h.run('q'.repeat(40));
    await h.store.commit(
      h.sessionId,
      [{ kind: 'setScratchpad', scratchpadSessionId: h.sessionId, key: 'k', value: 'v' }],
      [],
    );
    const r = await describeContext(h.deps, { sessionId: h.sessionId });
    expect(r.agentId).toBe('main');
    expect(r.parts.map((p) => p.part)).toEqual([
      'system',
      'scratchpad',
      'summary',
      'history',
      'dynamic_tail',
      'tail_reminder',
    ]);
    expect(r.parts[0]).toEqual({ part: 'system', messages: 1, tokens: 100 });
    expect(r.parts[1].messages).toBe(1);
    expect(r.parts[2]).toEqual({ part: 'summary', messages: 0, tokens: 0 });
    expect(r.parts[3]).toEqual({ part: 'history', messages: 2, tokens: 30 });
    expect(r.parts[4].tokens).toBeGreaterThan(0);
    expect(r.parts[5]).toEqual({ part: 'tail_reminder', messages: 1, tokens: 3 });
    expect(r.tools.count).toBeGreaterThan(1);
    expect(r.totalTokens).toBe(r.parts.reduce((n, p) => n + p.tokens, 0) + r.tools.tokens);
    expect(r).toMatchObject({ historyRows: 2, contextBudgetTokens: 80_000, compaction: { keepRecent: 6 } });
  });
});
