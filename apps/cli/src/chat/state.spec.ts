import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { ServerFrame } from '@skald/contracts';
import { plain, type Line } from './format.ts';
import { itemLines, outboxLines, pendingLines, statusLine, streamingLines } from './render.ts';
import {
  initialState,
  reduce,
  withHistory,
  withInboxItem,
  editableCommand,
  withSent,
  type ChatState,
} from './state.ts';

const S = 'a0000000-0000-4000-8000-000000000001';
let seq = 0;
/** A session event of the conversation, with the next seq. */
const ev = (f: Record<string, unknown>): ServerFrame => ({ session_id: S, seq: ++seq, ...f }) as unknown as ServerFrame;
const eph = (f: Record<string, unknown>): ServerFrame => ({ session_id: S, ...f }) as unknown as ServerFrame;
const id = (n: number) => `b0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

const play = (frames: ServerFrame[], from: ChatState = initialState()) => frames.reduce(reduce, from);
const screen = (s: ChatState): string[] =>
  [
    ...s.items.flatMap(itemLines),
    ...s.active.flatMap(itemLines),
    ...streamingLines(s.streaming),
    ...(s.pending[0] ? pendingLines(s.pending[0], 'keys') : []),
  ].map(plain);

/** A turn with reasoning, a command that needs approval, and the answer. */
function turn(): ServerFrame[] {
  return [
    ev({ type: 'user_message', message_id: id(1), client_message_id: 'c1', content: 'list the files' }),
    eph({ type: 'token_delta', message_id: id(2), kind: 'reasoning', delta: 'I should ' }),
    eph({ type: 'token_delta', message_id: id(2), kind: 'reasoning', delta: 'run ls.' }),
    ev({ type: 'thinking', message_id: id(2), content: '', reasoning_content: 'I should run ls.' }),
    ev({
      type: 'tool_start',
      tool_call_id: id(3),
      message_id: id(2),
      name: 'execute_cmd',
      arguments: { command: 'ls -la' },
      label_short: 'ls',
      label_full: 'ls -la',
    }),
    ev({
      type: 'pending_write',
      request_id: id(4),
      tool_call_id: id(3),
      kind: 'command',
      new_content: '$ ls -la',
      lands_at: 'sandbox',
    }),
  ];
}

describe('the chat screen, from frames', () => {
  it('streams reasoning dimmed, shows the tool row with its command and the approval prompt', () => {
    const s = play(turn());
    expect(screen(s)).toEqual([
      '› list the files',
      'I should run ls.',
      '◌ execute_cmd $ ls -la',
      '! approve execute_cmd? $ ls -la',
      '  y approve  n reject with a note',
    ]);
    const reasoning = s.items.flatMap(itemLines).find((l) => plain(l) === 'I should run ls.');
    expect(reasoning?.[0].dim).toBe(true);
    expect(s.running).toBe(true);
  });

  it("the approval offers the call's narrow session scope and an edit once the inbox item names them", () => {
    const before = play(turn());
    expect(editableCommand(before.pending[0])).toBeNull();
    expect(plain(pendingLines(before.pending[0], 'keys').at(-1)!)).toBe('  y approve  n reject with a note');
    const s = withInboxItem(before, id(4), {
      scopes: [{ tool: 'execute_cmd', program: 'ls', subcommand: null }],
      secs: 3600,
      args: { command: 'ls -la', timeout_s: 30 },
    });
    expect(plain(pendingLines(s.pending[0], 'keys').at(-1)!)).toBe(
      '  y approve  s approve for this session (`ls` commands, 1 h)  e edit the command  n reject with a note',
    );
    expect(editableCommand(s.pending[0])).toBe('ls -la');
    expect(plain(pendingLines(s.pending[0], 'note').at(-1)!)).toContain('why reject?');
    expect(plain(pendingLines(s.pending[0], 'edit').at(-1)!)).toContain('Enter approves it as edited');
  });

  it('an edit starts from the command as text: arguments without one offer none', () => {
    const s = withInboxItem(play(turn()), id(4), { scopes: null, secs: null, args: { command: 42 } });
    expect(editableCommand(s.pending[0])).toBeNull();
  });

  it('a file write shows its diff, added lines green and removed red', () => {
    const s = play([
      ev({
        type: 'pending_write',
        request_id: id(5),
        tool_call_id: id(6),
        kind: 'file',
        path: '/workspace/plan.md',
        old_content: 'one\ntwo\n',
        new_content: 'one\nthree\n',
        lands_at: 'sandbox',
      }),
    ]);
    const lines = pendingLines(s.pending[0], 'keys');
    expect(lines.map(plain)).toEqual([
      '! approve file write? write /workspace/plan.md',
      '  @@ -1,2 +1,2 @@',
      '   one',
      '  -two',
      '  +three',
      '  y approve  n reject with a note',
    ]);
    const color = (text: string) => lines.find((l) => plain(l) === text)?.find((seg) => seg.text.trim())?.color;
    expect(color('  +three')).toBe('green');
    expect(color('  -two')).toBe('red');
  });

  it('an edit asked for by approval_required shows as the diff of old and new', () => {
    const s = play([
      ev({
        type: 'approval_required',
        request_id: id(20),
        tool_call_id: id(21),
        tool_name: 'edit_file',
        arguments: { path: 'README.md', old: '# Skadl', new: '# Skald' },
        lands_at: 'sandbox',
      }),
    ]);
    expect(pendingLines(s.pending[0], 'keys').map(plain)).toEqual([
      '! approve edit_file? edit_file README.md',
      '  @@ -1,1 +1,1 @@',
      '  -# Skadl',
      '  +# Skald',
      '  y approve  n reject with a note',
    ]);
  });

  it('the tool ends, the answer streams, then stands as the final row and the turn is over', () => {
    let s = play([
      ...turn(),
      ev({ type: 'tool_done', tool_call_id: id(3), result: 'a.txt\nb.txt', result_type: 'text' }),
      eph({ type: 'token_delta', message_id: id(7), kind: 'content', delta: 'Two ' }),
    ]);
    expect(screen(s).slice(-1)).toEqual(['Two ']);
    s = play([eph({ type: 'token_delta', message_id: id(7), kind: 'content', delta: 'files.' })], s);
    s = play([ev({ type: 'done', message_id: id(7), stack_id: id(8), content: 'Two files.' })], s);
    expect(screen(s)).toEqual([
      '› list the files',
      'I should run ls.',
      '✓ execute_cmd $ ls -la',
      '  a.txt',
      'Two files.',
    ]);
    expect(s.running).toBe(false);
    expect(s.pending).toEqual([]);
  });

  it('a question shows its suggestions numbered; a stop ends the turn with "stopped"', () => {
    let s = play([
      ev({
        type: 'agent_question',
        request_id: id(9),
        tool_call_id: id(10),
        title: 'Colour',
        question: 'Which colour?',
        suggested_answers: ['red', 'blue'],
      }),
    ]);
    expect(screen(s)).toEqual([
      '? Colour',
      '  Which colour?',
      '  1. red',
      '  2. blue',
      '  type an answer, or its number, and press Enter',
    ]);
    s = play([ev({ type: 'error', code: 'interrupted', message: 'interrupted' })], s);
    expect(screen(s)).toEqual(['stopped']);
    expect(s.running).toBe(false);
  });

  it('a stop keeps what streamed, then says stopped; a message the stop kept out is named', () => {
    let s = withSent(initialState(), 'c9', 'and shorter');
    s = play(
      [
        ev({ type: 'user_message', message_id: id(11), client_message_id: 'c8', content: 'a long story' }),
        eph({ type: 'token_delta', message_id: id(12), kind: 'content', delta: 'Once upon' }),
        ev({ type: 'error', code: 'interrupted', message: 'interrupted' }),
        ev({ type: 'message_discarded', message_id: id(13), client_message_id: 'c9' }),
      ],
      s,
    );
    expect(screen(s)).toEqual([
      '› a long story',
      'Once upon',
      'stopped',
      'not sent: "and shorter" (the turn was stopped before it entered)',
    ]);
    expect(s.outbox).toEqual([]);
  });

  it('a message the gateway refuses leaves the waiting list, named with the reason', () => {
    let s = withSent(initialState(), 'c5', 'x'.repeat(12));
    s = withSent(s, 'c6', 'still waiting');
    s = play(
      [
        {
          type: 'error',
          code: 'invalid_request',
          message: 'content: at most 524288 characters',
          client_message_id: 'c5',
        },
      ],
      s,
    );
    expect(s.outbox.map((o) => o.clientMessageId)).toEqual(['c6']);
    expect(s.items.flatMap(itemLines).map(plain)).toEqual([
      'not sent: "xxxxxxxxxxxx": content: at most 524288 characters (invalid_request)',
    ]);
  });

  it('a message sent while a turn runs shows as waiting until its echo', () => {
    let s = withSent(play([ev({ type: 'turn_running', running: true })]), 'c1', 'also check the tests', 'queue');
    expect(outboxLines(s.outbox).map(plain)).toEqual(['› also check the tests  (queue: waiting)']);
    s = play(
      [ev({ type: 'user_message', message_id: id(14), client_message_id: 'c1', content: 'also check the tests' })],
      s,
    );
    expect(s.outbox).toEqual([]);
    expect(screen(s)).toEqual(['› also check the tests']);
  });

  it('an approval answered elsewhere (the web inbox) leaves the prompt', () => {
    const s = play([
      ...turn(),
      {
        type: 'approval_resolved',
        request_id: id(4),
        tool_call_id: id(3),
        session_id: S,
        source: 'web',
        approved: true,
      } as unknown as ServerFrame,
    ]);
    expect(s.pending).toEqual([]);
  });

  it('history first, then the replay of the same messages: each message shows once', () => {
    const h = withHistory(initialState(), {
      items: [
        { id: id(1), role: 'user', content: 'list the files', created_at: '2026-01-01T00:00:00.000Z' },
        {
          id: id(2),
          role: 'assistant',
          content: 'Let me look.',
          created_at: '2026-01-01T00:00:01.000Z',
          tool_calls: [
            {
              id: id(3),
              name: 'execute_cmd',
              arguments: { command: 'ls -la' },
              status: 'done',
              result: 'a.txt',
              label_short: '$ ls -la',
            },
          ],
        },
        { id: id(7), role: 'assistant', content: 'Two files.', created_at: '2026-01-01T00:00:02.000Z' },
      ],
      has_more: false,
      session_id: S,
      resume_seq: 0,
    });
    const s = play(
      [
        ev({ type: 'user_message', message_id: id(1), content: 'list the files' }),
        ev({ type: 'done', message_id: id(7), stack_id: id(8), content: 'Two files.' }),
      ],
      h,
    );
    // the text that came with the tool calls stands before them, the final answer after
    expect(screen(s)).toEqual(['› list the files', 'Let me look.', '✓ execute_cmd $ ls -la', '  a.txt', 'Two files.']);
  });

  it('any frames, in any order and repeated: the screen never throws and a message id shows at most once', () => {
    const ids = [1, 2, 3, 4].map(id);
    const frame = fc.oneof(
      fc.record({ type: fc.constant('user_message'), message_id: fc.constantFrom(...ids), content: fc.string() }),
      fc.record({
        type: fc.constant('done'),
        message_id: fc.constantFrom(...ids),
        content: fc.string(),
        stack_id: fc.constant(id(9)),
      }),
      fc.record({
        type: fc.constant('thinking'),
        message_id: fc.constantFrom(...ids),
        content: fc.string(),
        reasoning_content: fc.option(fc.string(), { nil: undefined }),
      }),
      fc.record({
        type: fc.constant('token_delta'),
        message_id: fc.constantFrom(...ids),
        kind: fc.constantFrom('content', 'reasoning'),
        delta: fc.string(),
      }),
      fc.record({
        type: fc.constant('tool_start'),
        tool_call_id: fc.constantFrom(...ids),
        message_id: fc.constant(id(5)),
        name: fc.string(),
        arguments: fc.oneof(fc.string(), fc.dictionary(fc.string(), fc.jsonValue())),
        label_short: fc.constant(''),
        label_full: fc.constant(''),
      }),
      fc.record({
        type: fc.constantFrom('tool_done', 'tool_error', 'tool_rejected', 'tool_cancelled'),
        tool_call_id: fc.constantFrom(...ids),
        result: fc.string(),
        error: fc.string(),
        reason: fc.string(),
      }),
      fc.record({
        type: fc.constant('pending_write'),
        request_id: fc.constantFrom(...ids),
        kind: fc.constantFrom('file', 'command'),
        new_content: fc.string(),
        old_content: fc.option(fc.string(), { nil: undefined }),
      }),
      fc.record({ type: fc.constant('error'), code: fc.string(), message: fc.string() }),
      fc.record({ type: fc.constant('turn_running'), running: fc.boolean() }),
    );
    fc.assert(
      fc.property(fc.array(frame, { maxLength: 40 }), (raw) => {
        const frames = raw.map((f) => ({ session_id: S, ...f }) as unknown as ServerFrame);
        const s = play([...frames, ...frames]);
        const keys = s.items.map((i) => i.key);
        expect(new Set(keys).size).toBe(keys.length);
        const lines: Line[] = [...s.items.flatMap(itemLines), ...s.pending.flatMap((p) => pendingLines(p, 'keys'))];
        for (const l of lines) expect(typeof plain(l)).toBe('string');
      }),
      { seed: 37, numRuns: 2000 },
    );
  });

  it('the status line says what Enter and Ctrl-C do now', () => {
    const base = { connection: 'open' as const, delivery: 'steer' as const, stopping: false };
    expect(plain(statusLine({ ...base, running: false }))).toBe('Enter sends · /help lists commands · Ctrl-C exits');
    expect(plain(statusLine({ ...base, running: true }))).toBe(
      'working · Enter sends (steer: enters at the next step of this turn) · Tab changes · Ctrl-C stops',
    );
    expect(plain(statusLine({ ...base, running: true, stopping: true }))).toBe('stopping… Ctrl-C again exits');
    expect(plain(statusLine({ ...base, running: false, connection: 'connecting' }))).toContain('reconnecting…');
  });
});
