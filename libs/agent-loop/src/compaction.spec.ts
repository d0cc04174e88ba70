import { LoopHarness } from './testing';

const compaction = { thresholdTokens: 10, keepRecent: 2, strength: 'cheap' };
const isSummaryCall = (messages: { role: string; content: unknown }[]): boolean =>
  typeof messages[0].content === 'string' && messages[0].content.startsWith('You maintain the running summary');

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

  it('summarises all but the recent rows with the configured strength and loads only rows after the boundary', async () => {
    const h = new LoopHarness({
      config: { compaction, maxHistoryMessages: 1 },
      script: [
        { content: 'answer one, quite a long answer indeed' },
        { content: 'SUMMARY-1' },
        { content: 'answer two' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    await h.run('question two');
    const [, summarise, main] = h.model.calls;
    expect(isSummaryCall(summarise.messages)).toBe(true);
    expect(h.model.selections[1]).toMatchObject({ strength: 'cheap', pinned: null });
    expect(summarise.messages[1].content).toContain('[user] question one is long enough');
    expect(summarise.messages[1].content).not.toContain('question two');
    const rows = h.messages();
    expect(await h.store.getCompaction(h.frames()[0].id)).toEqual({
      frameId: h.frames()[0].id,
      summary: 'SUMMARY-1',
      boundaryMessageId: rows[0].id,
    });
    // maxHistoryMessages (1) has no effect when compaction is on
    expect(main.messages.slice(1, -1)).toEqual([
      { role: 'system', content: 'Summary of the earlier conversation (older messages were compacted):\nSUMMARY-1' },
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
        { content: 'SUMMARY-1' },
        { content: 'answer two, also long enough for it' },
        { content: 'SUMMARY-2' },
        { content: 'answer three' },
      ],
    });
    await h.run('question one is long enough to pass the threshold');
    await h.run('question two');
    await h.run('question three');
    const second = h.model.calls[3];
    expect(isSummaryCall(second.messages)).toBe(true);
    expect(second.messages[1].content).toContain('Existing summary:\nSUMMARY-1');
    const last = h.model.calls[4].messages;
    const summaries = last.filter(
      (m) => m.role === 'system' && typeof m.content === 'string' && m.content.includes('SUMMARY'),
    );
    expect(summaries).toEqual([
      { role: 'system', content: 'Summary of the earlier conversation (older messages were compacted):\nSUMMARY-2' },
    ]);
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

  it('stays under the threshold without summarising', async () => {
    const h = new LoopHarness({
      config: { compaction: { ...compaction, thresholdTokens: 10_000 } },
      script: [{ content: 'a' }, { content: 'b' }],
    });
    await h.run('q1');
    await h.run('q2');
    expect(h.model.calls.some((c) => isSummaryCall(c.messages))).toBe(false);
  });
});
