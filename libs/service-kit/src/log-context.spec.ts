import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { withLogIds, withRequestLogIds } from './log-context';

function capture() {
  const lines: Array<Record<string, unknown>> = [];
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(chunk.toString());
      lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
      done();
    },
  });
  return { log: createLogger('test', 'info', 'test-1', stream), lines, raw };
}

describe('log ids', () => {
  it('lines written inside a context carry its ids, across awaits and timers; lines outside carry none', async () => {
    const { log, lines } = capture();
    await withLogIds({ userId: 'u1', sessionId: 's1', turnId: 't1' }, async () => {
      log.info({}, 'turn started');
      await new Promise((r) => setTimeout(r, 1));
      await withLogIds({ toolCallId: 'c1' }, async () => {
        await Promise.resolve();
        log.info({ tool: 'execute_cmd' }, 'tool call ended');
      });
      log.info({}, 'turn ended');
    });
    log.info({}, 'idle');
    expect(lines.map(({ msg, userId, sessionId, turnId, toolCallId }) => ({ msg, userId, sessionId, turnId, toolCallId })))
      .toEqual([
        { msg: 'turn started', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: undefined },
        { msg: 'tool call ended', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: 'c1' },
        { msg: 'turn ended', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: undefined },
        { msg: 'idle', userId: undefined, sessionId: undefined, turnId: undefined, toolCallId: undefined },
      ]);
  });

  it("a request's wire ids name the line; a call site's own field wins and is written once", () => {
    const { log, lines, raw } = capture();
    withRequestLogIds({ actor: { userId: 'u1' }, session_id: 's1', tool_call_id: 'c1' }, () =>
      log.info({ sessionId: 's2' }, 'checked'),
    );
    expect(lines[0]).toMatchObject({ userId: 'u1', sessionId: 's2', toolCallId: 'c1', service: 'test' });
    expect(lines[0]).not.toHaveProperty('turnId');
    expect(raw[0].match(/"sessionId"/g)).toHaveLength(1);
  });

  it('redaction still applies to the fields of a line', () => {
    const { log, lines } = capture();
    withLogIds({ userId: 'u1' }, () => log.info({ token: 'abc', headers: { authorization: 'Bearer x' } }, 'login'));
    expect(lines[0]).toMatchObject({ userId: 'u1', token: '[redacted]', headers: { authorization: '[redacted]' } });
  });
});
