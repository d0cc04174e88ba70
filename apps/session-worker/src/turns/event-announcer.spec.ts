import { expect } from '@jest/globals';
import * as fc from 'fast-check';
import type { SessionEventDraft } from '@skald/agent-loop';
import type { Bus } from '@skald/messaging/bus-port';
import { Writable } from 'node:stream';
import { createLogger } from '@skald/service-kit/logger';
import { loggerWithIds } from '@skald/service-kit/log-ids';
import type { Logger } from '@skald/service-kit';
import { Registry } from 'prom-client';
import type { CommittedEvent } from '../loop-adapters/session-store/committed-event';
import { EventAnnouncer, SEQS_KEPT, ToolCallLogLevels, toolCallLine } from './event-announcer';
import { TurnMetrics } from './turn-metrics';

/** The publishes the announcer makes: subject, event type and seq, and whether it asked for a write at once. */
function announcer() {
  const sent: Array<{ subject: string; type: string; seq: number; now: boolean }> = [];
  const bus = {
    publish: ({ subject }: { subject: string }, m: { type: string; seq: number }, opts: { now?: boolean } = {}) =>
      sent.push({ subject, type: m.type, seq: m.seq, now: opts.now === true }),
  };
  const log = { info: () => undefined, error: () => undefined };
  return { sent, announcer: new EventAnnouncer(bus as unknown as Bus, log as unknown as Logger) };
}

const at = (seq: number, event: CommittedEvent['event']): CommittedEvent => ({
  userId: 'u1',
  sessionId: 's1',
  seq,
  event,
});

describe('EventAnnouncer', () => {
  it("writes a message's echo at once (with what precedes it), every other event with the pass", () => {
    const { sent, announcer: a } = announcer();
    a.announce([
      at(7, { type: 'messages_superseded', from_message_id: 'm0' }),
      at(8, { type: 'user_message', message_id: 'm1', content: 'hi' }),
    ]);
    a.announce([at(9, { type: 'thinking', message_id: 'm2', content: 'x' })]);
    a.announce([at(10, { type: 'done', message_id: 'm3', stack_id: 'f1', content: 'ok' })]);
    expect(sent).toEqual([
      { subject: 'events.u1.s1', type: 'messages_superseded', seq: 7, now: false },
      { subject: 'events.u1.s1', type: 'user_message', seq: 8, now: true },
      { subject: 'events.u1.s1', type: 'thinking', seq: 9, now: false },
      { subject: 'events.u1.s1', type: 'done', seq: 10, now: false },
    ]);
  });

  it("queues the echo with the pass when its writer sends it with the submit's answer (`now: false`)", () => {
    const { sent, announcer: a } = announcer();
    a.announce([at(1, { type: 'user_message', message_id: 'm1', content: 'hi' })], { now: false });
    expect(sent).toEqual([{ subject: 'events.u1.s1', type: 'user_message', seq: 1, now: false }]);
  });

  it('stamps a token delta with the last seq it announced of the session (0 when it knows none), for bounded sessions', () => {
    type Sent = { type: string; session_id: string; after_seq?: number };
    const deltas: Sent[] = [];
    const bus = { publish: (_to: unknown, m: Sent) => m.type.includes('_') && !('seq' in m) && deltas.push(m) };
    const a = new EventAnnouncer(bus as unknown as Bus, { info: () => undefined } as unknown as Logger);
    const sink = a.sinkFor('u1');
    const delta = (session_id: string) =>
      sink.ephemeral({
        type: 'token_delta',
        session_id,
        message_id: 'm',
        depth: 0,
        kind: 'content',
        offset: 0,
        delta: 'x',
      });
    delta('s1');
    a.announce([
      at(4, { type: 'user_message', message_id: 'm1', content: 'hi' }),
      at(5, { type: 'file_changed', path: 'a' }),
    ]);
    delta('s1');
    delta('s2');
    // Another session's events do not move it; a progress line is not stamped.
    a.announce([{ ...at(90, { type: 'file_changed', path: 'b' }), sessionId: 's2' }]);
    delta('s1');
    sink.ephemeral({ type: 'tool_progress', session_id: 's1', tool_call_id: 't', stream: 'stdout', chunk: 'y' });
    expect(deltas.map((d) => [d.session_id, d.after_seq])).toEqual([
      ['s1', 0],
      ['s1', 5],
      ['s2', 0],
      ['s1', 5],
      ['s1', undefined],
    ]);
    for (let i = 0; i <= SEQS_KEPT; i++)
      a.announce([{ ...at(1, { type: 'file_changed', path: 'c' }), sessionId: `x${i}` }]);
    delta('s1');
    expect(deltas.at(-1)?.after_seq).toBe(0);
  });
});

type Line = { level: 'info' | 'debug'; msg: string; fields: Record<string, unknown> };

/** An announcer whose log keeps every line with its level, and real metrics. */
function logged() {
  const lines: Line[] = [];
  const at = (level: Line['level']) => (fields: Record<string, unknown>, msg: string) =>
    lines.push({ level, msg, fields: { ...fields } });
  const log = { info: at('info'), debug: at('debug'), error: at('info') };
  const bus = { publish: () => undefined };
  const metrics = new TurnMetrics(new Registry());
  return { lines, metrics, announcer: new EventAnnouncer(bus as unknown as Bus, log as unknown as Logger, metrics) };
}

const start = (id: string, name: string): SessionEventDraft => ({
  type: 'tool_start',
  tool_call_id: id,
  message_id: 'm1',
  name,
  arguments: {},
  label_short: name,
  label_full: name,
});
const done = (id: string): SessionEventDraft => ({
  type: 'tool_done',
  tool_call_id: id,
  result: 'r',
  result_type: 'text',
});
const failed = (id: string): SessionEventDraft => ({ type: 'tool_error', tool_call_id: id, error: 'boom' });
const cancelled = (id: string): SessionEventDraft => ({ type: 'tool_cancelled', tool_call_id: id });
const rejected = (id: string): SessionEventDraft => ({ type: 'tool_rejected', tool_call_id: id, reason: 'no' });
const approval = (id: string): SessionEventDraft => ({
  type: 'approval_required',
  request_id: `r-${id}`,
  tool_call_id: id,
  tool_name: 'read_file',
  arguments: {},
});

async function steps(metrics: TurnMetrics): Promise<Record<string, number>> {
  const m = await metrics.toolCallSteps.get();
  return Object.fromEntries(m.values.map((v) => [String(v.labels.step), v.value]));
}

describe('EventAnnouncer: tool call log lines', () => {
  it("writes a call's lines with the turn's logger, so they name its user, session and turn, and the call once", () => {
    const raw: string[] = [];
    const out = new Writable({
      write(chunk: Buffer, _enc, done) {
        raw.push(chunk.toString());
        done();
      },
    });
    const log = createLogger('session-worker', 'debug', 'w1', out);
    const a = new EventAnnouncer({ publish: () => undefined } as unknown as Bus, log);
    const turn = loggerWithIds(log, { userId: 'u1', sessionId: 's1', turnId: 't1' });
    a.announce([at(1, start('c1', 'execute_cmd')), at(2, approval('c1')), at(3, done('c1'))], { log: turn });
    const lines = raw.map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines.map((l) => l.msg)).toEqual(['tool call started', 'tool call awaits approval', 'tool call ended']);
    for (const l of lines) expect(l).toMatchObject({ userId: 'u1', sessionId: 's1', turnId: 't1', toolCallId: 'c1' });
    expect(raw.every((l) => l.match(/"toolCallId"/g)?.length === 1)).toBe(true);
  });

  it('logs a read-only call that succeeds at debug from start to end, and counts both steps', async () => {
    const { lines, metrics, announcer: a } = logged();
    a.announce([at(1, start('c1', 'read_file'))]);
    a.announce([at(2, done('c1'))]);
    expect(lines).toEqual([
      { level: 'debug', msg: 'tool call started', fields: { toolCallId: 'c1', tool: 'read_file' } },
      { level: 'debug', msg: 'tool call ended', fields: { toolCallId: 'c1', status: 'done' } },
    ]);
    expect(await steps(metrics)).toEqual({ started: 1, done: 1 });
  });

  it('logs a call with side effects at info from start to end', () => {
    const { lines, announcer: a } = logged();
    a.announce([at(1, start('c1', 'execute_cmd')), at(2, done('c1'))]);
    a.announce([at(3, start('c2', 'mcp__srv__echo')), at(4, done('c2'))]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['info', 'tool call started'],
      ['info', 'tool call ended'],
      ['info', 'tool call started'],
      ['info', 'tool call ended'],
    ]);
  });

  it('logs a read that fails, is cancelled, is rejected or waits for a human at info, naming its tool at the end', () => {
    for (const end of [failed, cancelled, rejected]) {
      const { lines, announcer: a } = logged();
      a.announce([at(1, start('c1', 'list_files')), at(2, end('c1'))]);
      expect(lines[0].level).toBe('debug');
      expect(lines[1]).toEqual({
        level: 'info',
        msg: 'tool call ended',
        fields: expect.objectContaining({ toolCallId: 'c1', tool: 'list_files' }),
      });
    }
    const { lines, announcer: a } = logged();
    a.announce([at(1, start('c1', 'read_file')), at(2, approval('c1'))]);
    a.announce([at(3, done('c1'))]);
    expect(lines.map((l) => [l.level, l.msg])).toEqual([
      ['debug', 'tool call started'],
      ['info', 'tool call awaits approval'],
      ['info', 'tool call ended'],
    ]);
  });

  it('logs the end of a call whose start it did not see (another worker, before a takeover) at info', () => {
    const { lines, announcer: a } = logged();
    a.announce([at(1, done('c9'))]);
    expect(lines).toEqual([{ level: 'info', msg: 'tool call ended', fields: { toolCallId: 'c9', status: 'done' } }]);
  });

  it('model: every step is counted; a step is at debug only on the routine path; memory is bounded (seeded)', () => {
    const TOOLS = ['read_file', 'list_files', 'grep_files', 'execute_cmd', 'write_file', 'mcp__a__b', 'delegate'];
    const op = fc.record({
      call: fc.integer({ min: 0, max: 11 }),
      kind: fc.constantFrom('start', 'done', 'failed', 'cancelled', 'rejected', 'approval'),
      tool: fc.constantFrom(...TOOLS),
    });
    fc.assert(
      fc.property(fc.array(op, { maxLength: 60 }), fc.integer({ min: 1, max: 6 }), (ops, kept) => {
        const levels = new ToolCallLogLevels(kept);
        // The oracle: per call, its tool if its start was seen and it has been routine so far.
        const routine = new Map<string, string>();
        for (const o of ops) {
          const id = `c${o.call}`;
          const ev =
            o.kind === 'start'
              ? start(id, o.tool)
              : o.kind === 'done'
                ? done(id)
                : o.kind === 'failed'
                  ? failed(id)
                  : o.kind === 'cancelled'
                    ? cancelled(id)
                    : o.kind === 'rejected'
                      ? rejected(id)
                      : approval(id);
          const line = toolCallLine(ev)!;
          const got = levels.level(ev, line);
          let want: 'info' | 'debug';
          if (o.kind === 'start') {
            routine.delete(id);
            want = ['read_file', 'list_files', 'grep_files'].includes(o.tool) ? 'debug' : 'info';
            if (want === 'debug') routine.set(id, o.tool);
            while (routine.size > kept) routine.delete(routine.keys().next().value as string);
          } else {
            const tool = routine.get(id);
            routine.delete(id);
            want = tool !== undefined && o.kind === 'done' ? 'debug' : 'info';
            // an info end of a call started at debug names its tool
            if (tool !== undefined && want === 'info') expect(line.fields.tool).toBe(tool);
          }
          expect(got).toBe(want);
          expect(levels.size).toBeLessThanOrEqual(kept);
        }
      }),
      { seed: 1911, numRuns: 500 },
    );
  });
});
