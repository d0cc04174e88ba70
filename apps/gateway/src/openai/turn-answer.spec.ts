import type { SessionEvent } from '@skald/contracts';
import type { ReadItem } from './session-event-reader';
import { LiveAnswer } from './live-answer';
import { TurnAnswer, type AnswerStep } from './turn-answer';

const S = '00000000-0000-4000-8000-000000000001';
const MSG = '00000000-0000-4000-8000-0000000000aa';
const OTHER = '00000000-0000-4000-8000-0000000000bb';
const REQ = '00000000-0000-4000-8000-0000000000cc';
const CALL = '00000000-0000-4000-8000-0000000000dd';
let seq = 0;
const ev = (e: Record<string, unknown>): ReadItem => ({
  kind: 'event',
  event: { session_id: S, seq: ++seq, ...e } as unknown as SessionEvent,
});
const idle = (running: boolean, waiting?: 'approval'): ReadItem => ({ kind: 'idle', running, waiting });
const place = { inboxUrl: 'https://skald.example/#inbox' };

/** The answer as a client is sent it from the stored events alone (no live deltas). */
function fold(items: ReadItem[]): AnswerStep[] {
  const a = new LiveAnswer(MSG, new TurnAnswer(MSG, place));
  return items.flatMap((i) => a.read(i));
}

describe('the answer read off a conversation’s events', () => {
  it('is the root agent’s rounds after the message’s echo, joined by a blank line, with reasoning', () => {
    expect(
      fold([
        ev({ type: 'done', message_id: OTHER, stack_id: OTHER, content: 'an earlier turn' }),
        ev({ type: 'user_message', message_id: MSG, content: 'q' }),
        ev({ type: 'thinking', message_id: OTHER, content: 'Let me look.', input_tokens: 3, output_tokens: 2 }),
        ev({ type: 'tool_start', tool_call_id: CALL, message_id: OTHER, name: 'read_file', arguments: {} }),
        ev({ type: 'tool_done', tool_call_id: CALL, result: 'secret tool output', result_type: 'text' }),
        ev({
          type: 'agent_start',
          stack_id: OTHER,
          parent_tool_call_id: CALL,
          agent_id: 'r',
          parent_agent_id: 'main',
          depth: 1,
          prompt_preview: '',
        }),
        ev({ type: 'thinking', message_id: OTHER, content: 'sub-agent words' }),
        ev({ type: 'done', message_id: OTHER, stack_id: OTHER, content: 'sub-agent answer' }),
        ev({
          type: 'agent_done',
          stack_id: OTHER,
          parent_tool_call_id: CALL,
          agent_id: 'r',
          parent_agent_id: 'main',
          depth: 1,
          result_preview: '',
        }),
        ev({ type: 'done', message_id: OTHER, stack_id: OTHER, content: 'Found it.', reasoning_content: 'hm' }),
        ev({ type: 'done', message_id: OTHER, stack_id: OTHER, content: 'after the end' }),
      ]),
    ).toEqual([
      { kind: 'content', text: 'Let me look.' },
      { kind: 'reasoning', text: 'hm' },
      { kind: 'content', text: '\n\nFound it.' },
      { kind: 'end', finish: 'stop' },
    ]);
  });

  it('ends with where to approve when a call needs a human, before or after the echo', () => {
    const steps = fold([
      ev({ type: 'user_message', message_id: MSG, content: 'q' }),
      ev({
        type: 'pending_write',
        request_id: REQ,
        tool_call_id: CALL,
        kind: 'command',
        new_content: '$ rm -rf build',
      }),
    ]);
    expect(steps.map((x) => x.kind)).toEqual(['content', 'end']);
    const text = (steps[0] as { text: string }).text;
    expect(text).toContain('`rm -rf build` (request ' + REQ + ')');
    expect(text).toContain(place.inboxUrl);
    // An earlier turn parked on a human: the message waits behind it, and the answer says where to go.
    const parked = fold([idle(true, 'approval')]);
    expect(parked.map((x) => x.kind)).toEqual(['content', 'end']);
    expect((parked[0] as { text: string }).text).toContain(place.inboxUrl);
  });

  it('waits while the message is queued, ends on a stop, fails on a failed turn, is told a discard', () => {
    expect(fold([idle(false), idle(true)])).toEqual([]);
    expect(fold([ev({ type: 'user_message', message_id: MSG, content: 'q' }), idle(false)])).toEqual([
      { kind: 'end', finish: 'stop' },
    ]);
    expect(
      fold([
        ev({ type: 'user_message', message_id: MSG, content: 'q' }),
        ev({ type: 'error', code: 'llm_failed', message: 'no model answered' }),
      ]),
    ).toEqual([{ kind: 'failed', status: 502, code: 'llm_failed', message: 'no model answered' }]);
    expect(fold([ev({ type: 'message_discarded', message_id: MSG, client_message_id: 'c' })])).toMatchObject([
      { kind: 'failed', status: 409 },
    ]);
    expect(
      fold([ev({ type: 'user_message', message_id: MSG, content: 'q' }), ev({ type: 'truncated', output_tokens: 9 })]),
    ).toEqual([{ kind: 'end', finish: 'length' }]);
  });
});
