import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import type { ChatMessageDto } from '@skald/contracts';
import { chatReducer, initialChat, type ChatState } from '../chat-state';
import { foldFrames, type RawFrame } from '../testing/frames';

const SID = '00000000-0000-4000-8000-00000000000a';
const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const fold = (frames: RawFrame[], from: ChatState = initialChat): ChatState => foldFrames(frames, from);
const at = '2026-01-01T00:00:00.000Z';

const user = (id: string, content: string): ChatMessageDto => ({ id, role: 'user', content, created_at: at });
const answer = (id: string, content: string, calls: ChatMessageDto['tool_calls'] = undefined): ChatMessageDto => ({
  id,
  role: 'assistant',
  content,
  created_at: at,
  ...(calls ? { tool_calls: calls } : {}),
});

describe('chat history by REST (GET /{source}/messages), then the events after it', () => {
  it('renders the page, tool calls of past answers as collapsed cards keyed like the live ones', () => {
    const st = fold([
      { type: 'hello', session_id: SID },
      {
        type: 'history',
        session_id: SID,
        has_more: true,
        items: [
          user('u1', 'list the files'),
          answer('a1', '', [
            {
              id: 't1',
              name: 'list_dir',
              arguments: { path: '.' },
              status: 'done',
              result: 'a.txt',
              label_short: 'list_dir .',
              path: '.',
            },
          ]),
          answer('a2', 'There is a.txt'),
        ],
      },
    ]);
    expect(st.items.map((i) => [i.kind, i.key])).toEqual([
      ['user', 'user:u1'],
      ['tool', 'tool:t1'],
      ['assistant', 'msg:a2'],
    ]);
    expect(st.items[1]).toMatchObject({ status: 'done', result: 'a.txt', name: 'list_dir', label: 'list_dir .' });
    expect(st.older).toBe('u1');
  });

  it('events replayed after the page (a running turn from its start) fold into the rows it shows, never doubling them', () => {
    const st = fold([
      { type: 'hello', session_id: SID },
      {
        type: 'history',
        session_id: SID,
        has_more: false,
        items: [
          user('u1', 'q'),
          answer('a1', '', [{ id: 't1', name: 'x', arguments: {}, status: 'running', result: null, label_short: 'x' }]),
        ],
      },
      { type: 'user_message', seq: 5, session_id: SID, message_id: 'u1', content: 'q' },
      { type: 'tool_start', seq: 6, session_id: SID, tool_call_id: 't1', message_id: 'a1', name: 'x' },
      { type: 'approval_required', seq: 7, session_id: SID, request_id: 'r1', tool_call_id: 't1', tool_name: 'x' },
    ]);
    expect(st.items.map((i) => i.key)).toEqual(['user:u1', 'tool:t1', 'req:r1']);
    expect(st.older).toBeNull();
  });

  it('scroll-back puts an earlier page first and doubles no row; after /clear the page replaces the screen', () => {
    const st = fold([
      { type: 'hello', session_id: SID },
      { type: 'history', session_id: SID, has_more: true, items: [user('u2', 'b'), answer('a2', 'B')] },
      {
        type: 'history_older',
        session_id: SID,
        has_more: false,
        items: [user('u1', 'a'), answer('a1', 'A'), user('u2', 'b')],
      },
    ]);
    expect(st.items.map((i) => i.key)).toEqual(['user:u1', 'msg:a1', 'user:u2', 'msg:a2']);
    expect(st.older).toBeNull();
    const cleared = fold(
      [
        { type: 'command_result', command: '/clear', content: 'Cleared the conversation (4 messages).' },
        { type: 'history', session_id: SID, has_more: false, items: [], replace: true },
      ],
      st,
    );
    expect(cleared.items.map((i) => i.kind)).toEqual(['notice']);
    // a page of another session (the active one changed meanwhile) is ignored
    expect(fold([{ type: 'history_older', session_id: 'other', has_more: false, items: [user('x', 'x')] }], st)).toBe(
      st,
    );
  });

  it('property: any split of a conversation into pages, loaded newest first, shows every row once, in order', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 120 }), fc.integer({ min: 1, max: 50 }), fc.nat(5), (n, size, overlap) => {
        const rows = Array.from({ length: n }, (_, i) => (i % 2 ? answer(`a${i}`, `A${i}`) : user(`u${i}`, `Q${i}`)));
        let st = fold([{ type: 'hello', session_id: SID }]);
        let end = n;
        let first = true;
        // pages may overlap (rows written between two requests): still no duplicate
        for (let guard = 0; end > 0 && guard < 200; guard++) {
          const start = Math.max(0, end - size);
          const page = rows.slice(start, Math.min(n, end + (first ? 0 : overlap)));
          st = chatReducer(st, {
            type: first ? 'history' : 'history_older',
            session_id: SID,
            has_more: start > 0,
            items: page,
          });
          first = false;
          end = start;
        }
        expect(st.items.map((i) => i.key)).toEqual(
          rows.map((r) => (r.role === 'user' ? `user:${r.id}` : `msg:${r.id}`)),
        );
        expect(st.older).toBeNull();
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  const DECIDED = {
    by_user_id: '00000000-0000-4000-8000-0000000000aa',
    at: '2026-12-07T06:00:00.000Z',
    channel: 'card' as const,
    bypass: { scope: 'call' as const, secs: 3600 },
  };
  const REJECTED = {
    by_user_id: '00000000-0000-4000-8000-0000000000aa',
    at: '2026-12-07T06:01:00.000Z',
    channel: 'inbox' as const,
    note: 'not in notes.md',
  };
  it('a reload shows the rows the live turn showed: the command and path of each call, each approval, its diff and how it ended', () => {
    const T = 't-cmd';
    const W = 't-write';
    const live = fold([
      { type: 'hello', session_id: SID },
      { type: 'user_message', seq: 1, session_id: SID, message_id: 'u1', content: 'tidy up' },
      { type: 'thinking', seq: 2, session_id: SID, message_id: 'a1', content: 'Looking.' },
      {
        type: 'tool_start',
        seq: 3,
        session_id: SID,
        tool_call_id: T,
        message_id: 'a1',
        name: 'execute_cmd',
        arguments: { command: 'git status' },
        label_short: '$ git status',
        label_full: '$ git status',
      },
      {
        type: 'pending_write',
        seq: 4,
        session_id: SID,
        kind: 'command',
        request_id: 'r1',
        tool_call_id: T,
        path: '$ execute_cmd',
        new_content: '$ git status',
      },
      {
        type: 'approval_resolved',
        request_id: 'r1',
        tool_call_id: T,
        session_id: SID,
        source: 'web',
        approved: true,
        decision: DECIDED,
      },
      { type: 'tool_done', seq: 5, session_id: SID, tool_call_id: T, result: 'clean' },
      {
        type: 'tool_start',
        seq: 6,
        session_id: SID,
        tool_call_id: W,
        message_id: 'a2',
        name: 'write_file',
        arguments: { path: 'notes.md', content: 'x' },
        label_short: 'write_file notes.md',
        label_full: 'write_file notes.md',
        path: 'notes.md',
      },
      {
        type: 'pending_write',
        seq: 7,
        session_id: SID,
        kind: 'file',
        request_id: 'r2',
        tool_call_id: W,
        path: '/workspace/notes.md',
        old_content: 'old\n',
        new_content: 'x',
      },
      {
        type: 'approval_resolved',
        request_id: 'r2',
        tool_call_id: W,
        session_id: SID,
        source: 'web',
        approved: false,
        decision: REJECTED,
      },
      { type: 'tool_rejected', seq: 8, session_id: SID, tool_call_id: W, reason: 'User rejected this tool call.' },
      { type: 'done', seq: 9, session_id: SID, message_id: 'a3', stack_id: 's1', content: 'Left it.' },
    ]);
    const reloaded = fold([
      { type: 'hello', session_id: SID },
      {
        type: 'history',
        session_id: SID,
        has_more: false,
        items: [
          user('u1', 'tidy up'),
          answer('a1', 'Looking.', [
            {
              id: T,
              name: 'execute_cmd',
              arguments: { command: 'git status' },
              status: 'done',
              result: 'clean',
              label_short: '$ git status',
              approval: { request_id: 'r1', outcome: 'approved', decision: DECIDED },
            },
          ]),
          answer('a2', '', [
            {
              id: W,
              name: 'write_file',
              arguments: { path: 'notes.md', content: 'x' },
              status: 'rejected',
              result: 'User rejected this tool call.',
              label_short: 'write_file notes.md',
              path: 'notes.md',
              approval: {
                request_id: 'r2',
                outcome: 'rejected',
                decision: REJECTED,
                preview: { path: '/workspace/notes.md', old_content: 'old\n', new_content: 'x' },
              },
            },
          ]),
          answer('a3', 'Left it.'),
        ],
      },
    ]);
    const rows = (st: ChatState) =>
      st.items.map((i) =>
        i.kind === 'tool'
          ? { key: i.key, label: i.label, status: i.status, result: i.result }
          : i.kind === 'approval'
            ? {
                key: i.key,
                resolved: i.resolved,
                decision: i.decision,
                command: i.toolName === 'execute_cmd' ? i.newContent : undefined,
                diff: i.path ? { path: i.path, old: i.oldContent, new: i.newContent } : undefined,
              }
            : { key: i.key, kind: i.kind },
      );
    expect(rows(reloaded)).toEqual(rows(live));
    expect(rows(reloaded)).toContainEqual({
      key: 'tool:t-cmd',
      label: '$ git status',
      status: 'done',
      result: 'clean',
    });
    expect(rows(reloaded)).toContainEqual({
      key: 'req:r2',
      resolved: 'rejected',
      decision: REJECTED,
      command: undefined,
      diff: { path: '/workspace/notes.md', old: 'old\n', new: 'x' },
    });
    expect(rows(reloaded)).toContainEqual(expect.objectContaining({ key: 'req:r1', decision: DECIDED }));
  });
});
