import { classifyEnding, endingInputOf, notificationSummary } from './job-ending';

describe('classifyEnding (the one classification of a job run)', () => {
  it('a final answer succeeds and is the result the model reads', () => {
    expect(classifyEnding({ kind: 'final', finalText: 'inbox: 3 mails' }, 'Inbox')).toMatchObject({
      status: 'succeeded',
      finalResponse: 'inbox: 3 mails',
      resultText: 'inbox: 3 mails',
      taskState: 'completed',
    });
  });

  it('a failure reaches the model as prose with the partial output', () => {
    const e = classifyEnding(
      { kind: 'failed', error: 'tool round limit exceeded', partialOutput: 'found 2 of 5' },
      'Research',
    );
    expect(e.status).toBe('failed');
    expect(e.resultText).toBe(
      'The task "Research" failed: tool round limit exceeded. Partial output before it ended:\nfound 2 of 5',
    );
    expect(e.partialOutput).toBe('found 2 of 5');
  });

  it('a kill is its own ending (cancelled), not a flavour of failure', () => {
    const e = classifyEnding({ kind: 'cancelled' }, 'Research');
    expect(e).toMatchObject({ status: 'cancelled', taskState: 'cancelled' });
    expect(e.resultText).toContain('was cancelled before it finished. It produced no output');
  });

  it('a session that never started is a failure the model hears about', () => {
    expect(classifyEnding({ kind: 'start_failed', error: 'unknown agent `x`' }, 'T')).toMatchObject({
      status: 'failed',
      error: 'unknown agent `x`',
      resultText: 'The task "T" could not be started: unknown agent `x`.',
    });
  });

  it('cuts a huge partial output', () => {
    const e = classifyEnding({ kind: 'failed', error: 'boom', partialOutput: 'x'.repeat(20_000) }, 'T');
    expect(e.resultText.length).toBeLessThan(9_000);
    expect(e.resultText).toContain('[partial output truncated]');
  });
});

describe('notificationSummary', () => {
  it('says how a cron run ended in one line', () => {
    const s = (input: Parameters<typeof classifyEnding>[0]) =>
      notificationSummary('Inbox', classifyEnding(input, 'Inbox'));
    expect(s({ kind: 'final', finalText: '3 new\nmails' })).toBe('Cron job "Inbox" finished: 3 new mails');
    expect(s({ kind: 'cancelled' })).toBe('Cron job "Inbox" was cancelled');
    expect(s({ kind: 'failed', error: 'the model failed' })).toBe('Cron job "Inbox" failed: the model failed');
    expect(s({ kind: 'final', finalText: 'x'.repeat(500) })).toHaveLength('Cron job "Inbox" finished: '.length + 200);
  });

  it('a result or error with NUL, a lone surrogate or an escape reads as U+FFFD in one line Postgres can store', () => {
    const s = (input: Parameters<typeof classifyEnding>[0]) =>
      notificationSummary('Inbox', classifyEnding(input, 'Inbox'));
    expect(s({ kind: 'final', finalText: 'a\u0000b\n\uD800' })).toBe('Cron job "Inbox" finished: a\uFFFDb \uFFFD');
    expect(s({ kind: 'failed', error: 'x\u001b[31m' })).toBe('Cron job "Inbox" failed: x\uFFFD[31m');
  });

  it('a stored run reads back as the ending it was classified from', () => {
    const stored = { status: 'failed', final_response: null, partial_output: 'half', error: 'boom' };
    expect(endingInputOf(stored)).toEqual({ kind: 'failed', error: 'boom', partialOutput: 'half' });
    expect(endingInputOf({ ...stored, status: 'succeeded', final_response: 'ok' })).toEqual({
      kind: 'final',
      finalText: 'ok',
    });
    expect(endingInputOf({ ...stored, status: 'cancelled' })).toEqual({ kind: 'cancelled', partialOutput: 'half' });
  });
});
