import { Writable } from 'node:stream';
import { createLogger } from './logger';
import { loggerWithIds, logIdsOf, requestLogIds } from './log-ids';

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

const idsOf = ({ msg, userId, sessionId, turnId, toolCallId }: Record<string, unknown>) => ({
  msg,
  userId,
  sessionId,
  turnId,
  toolCallId,
});

describe('log ids', () => {
  it("a logger's lines carry its ids, across awaits and timers and in its children; the parent's lines carry none", async () => {
    const { log, lines } = capture();
    const turn = loggerWithIds(log, { userId: 'u1', sessionId: 's1', turnId: 't1' });
    turn.info({}, 'turn started');
    await new Promise((r) => setTimeout(r, 1));
    const call = loggerWithIds(turn, { toolCallId: 'c1' });
    await Promise.resolve();
    call.info({ tool: 'execute_cmd' }, 'tool call ended');
    turn.child({ epoch: 3 }).info({}, 'turn ended');
    log.info({}, 'idle');
    expect(lines.map(idsOf)).toEqual([
      { msg: 'turn started', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: undefined },
      { msg: 'tool call ended', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: 'c1' },
      { msg: 'turn ended', userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: undefined },
      { msg: 'idle', userId: undefined, sessionId: undefined, turnId: undefined, toolCallId: undefined },
    ]);
    expect(lines[2]).toMatchObject({ epoch: 3 });
    expect(logIdsOf(call)).toEqual({ userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: 'c1' });
  });

  it("a request's wire ids name the line; a call site's own field wins and is written once; undefined ids are left out", () => {
    const { log, lines, raw } = capture();
    const req = loggerWithIds(log, requestLogIds({ actor: { userId: 'u1' }, session_id: 's1', tool_call_id: 'c1' }));
    req.info({ sessionId: 's2' }, 'checked');
    loggerWithIds(req, { sessionId: undefined, turnId: undefined }).info({}, 'again');
    expect(lines[0]).toMatchObject({ userId: 'u1', sessionId: 's2', toolCallId: 'c1', service: 'test' });
    expect(lines[0]).not.toHaveProperty('turnId');
    expect(raw[0].match(/"sessionId"/g)).toHaveLength(1);
    expect(lines[1]).toMatchObject({ userId: 'u1', sessionId: 's1', toolCallId: 'c1' });
    expect(lines[1]).not.toHaveProperty('turnId');
  });

  it('redaction still applies to the fields of a line', () => {
    const { log, lines } = capture();
    loggerWithIds(log, { userId: 'u1' }).info({ token: 'abc', headers: { authorization: 'Bearer x' } }, 'login');
    expect(lines[0]).toMatchObject({ userId: 'u1', token: '[redacted]', headers: { authorization: '[redacted]' } });
  });
});
