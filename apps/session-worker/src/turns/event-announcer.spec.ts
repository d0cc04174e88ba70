import type { Bus } from '@skald/messaging';
import type { Logger } from '@skald/service-kit';
import type { CommittedEvent } from '../store/pg-session-store';
import { EventAnnouncer } from './event-announcer';

/** The publishes the announcer makes: subject, event type and seq, and whether it asked for a write at once. */
function announcer() {
  const sent: Array<{ subject: string; type: string; seq: number; now: boolean }> = [];
  const bus = {
    publish: (subject: string, _schema: unknown, m: { type: string; seq: number }, opts: { now?: boolean } = {}) =>
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
});
