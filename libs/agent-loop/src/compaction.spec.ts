import { foldCount, normaliseSummary, SUMMARY_SECTIONS } from './compaction';
import { compactSession } from './maintenance';
import { LlmError } from './ports';
import { agent, LoopHarness, type RecordedLlmCall } from './testing';
import type { MessageRow } from './types';

const compaction = { thresholdTokens: 10, keepRecent: 2, strength: 'cheap' };
const isSummaryCall = (c: RecordedLlmCall): boolean =>
  typeof c.messages[0].content === 'string' && c.messages[0].content.startsWith('You keep the running summary');
const template = (sections: Partial<Record<(typeof SUMMARY_SECTIONS)[number], string>>): string =>
  SUMMARY_SECTIONS.map((s) => `## ${s}\n${sections[s] ?? '- (none)'}`).join('\n\n');
const HEADER = 'Summary of the earlier conversation (older messages were compacted):';

describe('compaction', () => {
  it('is opt-in: without it nothing is summarised and history is truncated to maxHistoryMessages', async () => {
    const h = new LoopHarness({ config: { maxHistoryMessages: 2 }, script: [{ content: 'a1' }, { content: 'a2' }] });
    await h.run('first question that is long enough');
    await h.run('second');
    expect(h.model.calls).toHaveLength(2);
    expect(h.model.calls[1].messages.slice(1, -1)).toEqual([
      { role: 'assistant', content: 'a1' },
      { role: 'user', content: 'second' },
    ]);
  });

  it('at turn start, summarises all but the recent rows into the fixed sections and loads only rows after the boundary', async () => {
    const h = new LoopHarness({
      config: { compaction, maxHistoryMessages: 1 },
      script: [
        { content: 'answer one, quite a long answer indeed' },
        { content: '## Goal\n- learn X\n\n## Progress\n- asked question one' },
        { content: 'answer two' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    await h.run('question two');
    const [, summarise, main] = h.model.calls;
    expect(isSummaryCall(summarise)).toBe(true);
    expect(summarise.tools).toEqual([]);
    expect(summarise.messages[0].content).toContain(SUMMARY_SECTIONS.map((s) => `## ${s}`).join('\n'));
    expect(h.model.selections[1]).toMatchObject({ strength: 'cheap', pinned: null });
    expect(summarise.messages[1].content).toBe(
      'Current summary:\n(none yet)\n\nMessages to fold into it (oldest first):\n[user] question one is long enough to pass the threshold',
    );
    const rows = h.messages();
    const summary = template({ Goal: '- learn X', Progress: '- asked question one' });
    expect(await h.store.getCompaction(h.frames()[0].id)).toEqual({
      frameId: h.frames()[0].id,
      summary,
      boundaryMessageId: rows[0].id,
    });
    // maxHistoryMessages (1) has no effect when compaction is on
    expect(main.messages.slice(1, -1)).toEqual([
      { role: 'system', content: `${HEADER}\n${summary}` },
      { role: 'assistant', content: 'answer one, quite a long answer indeed' },
      { role: 'user', content: 'question two' },
    ]);
    expect(rows).toHaveLength(4);
  });

  it('updates an existing summary instead of nesting one in another', async () => {
    const h = new LoopHarness({
      config: { compaction },
      script: [
        { content: 'answer one, quite a long answer indeed' },
        { content: '## Goal\n- SUMMARY-1' },
        { content: 'answer two, also long enough for it' },
        // a model that echoes the header and the old summary above its answer
        { content: `${HEADER}\n## Goal\n- SUMMARY-2` },
        { content: 'answer three' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    await h.run('question two');
    await h.run('question three');
    const second = h.model.calls[3];
    expect(isSummaryCall(second)).toBe(true);
    expect(second.messages[1].content).toContain(`Current summary:\n${template({ Goal: '- SUMMARY-1' })}\n\n`);
    expect(second.messages[1].content).not.toContain('question one');
    const last = h.model.calls[4].messages;
    const summaries = last.filter((m) => m.role === 'system' && JSON.stringify(m.content).includes('SUMMARY'));
    expect(summaries).toEqual([{ role: 'system', content: `${HEADER}\n${template({ Goal: '- SUMMARY-2' })}` }]);
  });

  it('runs at turn start only, never between the rounds of a turn', async () => {
    const h = new LoopHarness({
      config: { compaction },
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: 'x'.repeat(400) }) }],
      script: [
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'b' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'c' } }] },
        { content: 'done reading' },
      ],
    });
    await h.run('read three files please');
    expect(h.model.calls.filter(isSummaryCall)).toHaveLength(0);
    expect(h.model.calls).toHaveLength(4);
  });

  it('is skipped for ephemeral sessions', async () => {
    const h = new LoopHarness({
      config: { compaction },
      session: { isEphemeral: true },
      script: [{ content: 'answer one, quite a long answer indeed' }, { content: 'answer two' }],
    });
    await h.run('question one is long enough to pass the threshold');
    await h.run('question two');
    expect(h.model.calls.filter(isSummaryCall)).toHaveLength(0);
  });

  it('is skipped for sub-agents, however long their history', async () => {
    const h = new LoopHarness({
      config: { compaction },
      agents: [agent({ id: 'researcher', prompt: 'You research.' })],
      tools: [{ name: 'read_file', run: async () => ({ ok: true, content: 'y'.repeat(2_000) }) }],
      script: [
        { toolCalls: [{ name: 'execute_task', arguments: { agent_id: 'researcher', prompt: 'dig' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'a' } }] },
        { toolCalls: [{ name: 'read_file', arguments: { path: 'b' } }] },
        { content: 'found it' },
        { content: 'The researcher found it.' },
      ],
    });
    await h.run('research');
    expect(h.model.calls.filter(isSummaryCall)).toHaveLength(0);
  });

  it('retries a retriable failure of the summarising call like a round (same client after a backoff, then the next), announcing nothing', async () => {
    const h = new LoopHarness({
      config: { compaction },
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [
        { content: 'answer one, quite a long answer indeed' },
        { error: new LlmError('503 overloaded', true) },
        { error: new LlmError('503 overloaded', true, 2_000) },
        { error: new LlmError('503 still', true) },
        { content: '## Goal\n- SUMMARY-AFTER-RETRIES' },
        { content: 'answer two' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    expect(await h.run('question two')).toMatchObject({ kind: 'final', content: 'answer two' });
    const summaryCalls = h.model.calls.filter(isSummaryCall);
    expect(summaryCalls.map((c) => c.client)).toEqual(['alpha', 'alpha', 'alpha', 'beta']);
    expect(h.clock.sleeps).toEqual([1_000, 2_000]);
    expect((await h.store.getCompaction(h.frames()[0].id))?.summary).toContain('SUMMARY-AFTER-RETRIES');
    expect(h.eventsOf('model_fallback')).toEqual([]);
    expect(h.eventsOf('llm_failed')).toEqual([]);
  });

  it('gives up on compaction after the bounded tries, and the turn still answers', async () => {
    const h = new LoopHarness({
      config: { compaction, maxLlmAttempts: 2 },
      clients: [
        { name: 'alpha', cacheControl: false },
        { name: 'beta', cacheControl: false },
      ],
      script: [
        { content: 'answer one, quite a long answer indeed' },
        ...Array.from({ length: 6 }, () => ({ error: new LlmError('503 overloaded', true) })),
        { content: 'answer two' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    expect(await h.run('question two')).toMatchObject({ kind: 'final', content: 'answer two' });
    // three tries on each of the two clients the round may use, then the history stays unfolded
    expect(h.model.calls.filter(isSummaryCall)).toHaveLength(6);
    expect(await h.store.getCompaction(h.frames()[0].id)).toBeNull();
  });

  it('skips compaction when the summarising call fails, and the turn goes on', async () => {
    const h = new LoopHarness({
      config: { compaction },
      script: [
        { content: 'answer one, quite a long answer indeed' },
        { error: new Error('down') },
        { content: 'answer two' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    expect(await h.run('question two')).toMatchObject({ kind: 'final', content: 'answer two' });
    expect(await h.store.getCompaction(h.frames()[0].id)).toBeNull();
  });

  it('a /stop during the summarising call cancels the turn before the model is asked', async () => {
    const ctl = new AbortController();
    const h = new LoopHarness({
      config: { compaction },
      script: [{ content: 'answer one, quite a long answer indeed' }, { hang: true, before: () => ctl.abort() }],
    });
    await h.run('question one is long enough to pass the threshold');
    expect(await h.run('question two', ctl.signal)).toEqual({ kind: 'cancelled' });
    expect(h.model.calls).toHaveLength(2);
    expect(await h.store.getCompaction(h.frames()[0].id)).toBeNull();
  });

  it('stays under the threshold without summarising', async () => {
    const h = new LoopHarness({
      config: { compaction: { ...compaction, thresholdTokens: 10_000 } },
      script: [{ content: 'a' }, { content: 'b' }],
    });
    await h.run('q1');
    await h.run('q2');
    expect(h.model.calls.some(isSummaryCall)).toBe(false);
  });

  describe('/compact (compactSession)', () => {
    it('forces a compaction under the threshold, keeping the recent rows', async () => {
      const h = new LoopHarness({
        config: { compaction: { ...compaction, thresholdTokens: 100_000 } },
        script: [{ content: 'a1' }, { content: 'a2' }, { content: '## Open items\n- nothing' }, { content: 'a3' }],
      });
      await h.run('q1');
      await h.run('q2');
      const r = await compactSession(h.deps, { sessionId: h.sessionId });
      expect(r).toMatchObject({ kind: 'compacted', folded: 2, kept: 2 });
      await h.run('q3');
      expect(h.model.calls[3].messages.slice(1, -1)).toEqual([
        { role: 'system', content: `${HEADER}\n${template({ 'Open items': '- nothing' })}` },
        { role: 'user', content: 'q2' },
        { role: 'assistant', content: 'a2' },
        { role: 'user', content: 'q3' },
      ]);
    });

    it('says why when there is nothing to do', async () => {
      const h = new LoopHarness({ config: { compaction }, script: [{ content: 'a1' }] });
      expect(await compactSession(h.deps, { sessionId: h.sessionId })).toEqual({ kind: 'skipped', reason: 'empty' });
      await h.run('q1');
      expect(await compactSession(h.deps, { sessionId: h.sessionId })).toEqual({
        kind: 'skipped',
        reason: 'too_few_rows',
      });
      h.deps.config.compaction = null;
      expect(await compactSession(h.deps, { sessionId: h.sessionId })).toEqual({ kind: 'skipped', reason: 'off' });
    });

    it('refuses while a turn waits for a human', async () => {
      const h = new LoopHarness({
        config: { compaction },
        session: { turnState: 'parked' },
      });
      expect(await compactSession(h.deps, { sessionId: h.sessionId })).toEqual({ kind: 'skipped', reason: 'busy' });
    });
  });
});

describe('normaliseSummary', () => {
  it('puts every section in the fixed order, fills empty ones and files stray text under key facts', () => {
    expect(normaliseSummary('Intro line\n### progress:\n- did A\n## Goal\n- build B\n')).toBe(
      template({ Goal: '- build B', 'Key facts and decisions': 'Intro line', Progress: '- did A' }),
    );
  });
});

describe('foldCount', () => {
  const row = (role: MessageRow['role']): MessageRow => ({ role }) as MessageRow;
  it('keeps the recent rows and starts the kept part at a user row when there is one', () => {
    const rows = ['user', 'assistant', 'user', 'assistant', 'assistant', 'user'].map((r) =>
      row(r as MessageRow['role']),
    );
    expect(foldCount(rows, 2)).toBe(2);
    expect(foldCount(rows, 6)).toBe(0);
    expect(foldCount([row('user'), row('assistant'), row('assistant'), row('assistant')], 2)).toBe(2);
  });
});
