import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { ChatMessageDto } from '@skald/contracts';
import type { ChatHistoryRow, ToolCallsRow } from '@skald/persistence';
import { approvalOutcome, toChatMessage } from './chat-history';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const M1 = '00000000-0000-4000-8000-0000000000a1';
const R1 = '00000000-0000-4000-8000-0000000000b1';
const at = new Date('2026-12-01T10:00:00.000Z');
const STATUSES: ToolCallsRow['status'][] = [
  'pending',
  'running',
  'awaiting_human',
  'done',
  'failed',
  'rejected',
  'cancelled',
  'interrupted',
];

const call = (over: Partial<ToolCallsRow>): ToolCallsRow =>
  ({
    id: '00000000-0000-4000-8000-0000000000c1',
    message_id: M1,
    name: 'execute_cmd',
    arguments: JSON.stringify({ command: 'git status' }),
    status: 'done',
    result: 'clean',
    request_id: null,
    started_at: null,
    ...over,
  }) as ToolCallsRow;
const row = { id: M1, role: 'assistant', content: '', metadata: null, created_at: at } as unknown as ChatHistoryRow;

describe('chat history rows: the tool rows and approvals a reload shows', () => {
  it('a call carries the label tool_start showed: the command, or the tool and its path', () => {
    const [cmd] = toChatMessage(row, [call({})]).tool_calls ?? [];
    expect(cmd).toMatchObject({ label_short: '$ git status' });
    expect(cmd).not.toHaveProperty('approval');
    const [write] =
      toChatMessage(row, [call({ name: 'write_file', arguments: JSON.stringify({ path: 'notes.md', content: 'x' }) })])
        .tool_calls ?? [];
    expect(write).toMatchObject({ label_short: 'write_file notes.md', path: 'notes.md' });
  });

  it('an approval ends approved when the call ran, rejected, or cancelled before it ran; a waiting one has none yet', () => {
    const ask = { request_id: R1 };
    expect(approvalOutcome(call({ ...ask, status: 'done', started_at: at }))?.outcome).toBe('approved');
    expect(approvalOutcome(call({ ...ask, status: 'interrupted', started_at: at }))?.outcome).toBe('approved');
    expect(approvalOutcome(call({ ...ask, status: 'rejected' }))?.outcome).toBe('rejected');
    expect(approvalOutcome(call({ ...ask, status: 'cancelled' }))?.outcome).toBe('cancelled');
    expect(approvalOutcome(call({ ...ask, status: 'awaiting_human' }))).toBeUndefined();
    // a question is a question card, not an approval
    expect(approvalOutcome(call({ ...ask, name: 'ask_user_clarification', status: 'done' }))).toBeUndefined();
  });

  it("a settled approval carries the approval service's record of who answered, when, where and what it opened", () => {
    const decided = {
      by_user_id: M1,
      at: at.toISOString(),
      channel: 'inbox' as const,
      bypass: { scope: 'call' as const },
    };
    const preview = { path: '/workspace/a.txt', old_content: 'a', new_content: 'b' };
    const decisions = new Map([[R1, { decision: decided, preview }]]);
    const [c] =
      toChatMessage(row, [call({ request_id: R1, status: 'done', started_at: at })], decisions).tool_calls ?? [];
    expect(c?.approval).toEqual({ request_id: R1, outcome: 'approved', decision: decided, preview });
    // a call cancelled before it ran was answered by nobody; its card still showed the change
    expect(approvalOutcome(call({ request_id: R1, status: 'cancelled' }), decisions)).toEqual({
      request_id: R1,
      outcome: 'cancelled',
      preview,
    });
  });

  it('property: any stored call maps to a row the contract accepts, an approval only where one was asked', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(...STATUSES),
        fc.option(fc.constant(R1)),
        fc.boolean(),
        fc.string({ maxLength: 80 }),
        fc.constantFrom('execute_cmd', 'write_file', 'read_file', 'mcp__x__y'),
        (status, requestId, started, argsText, name) => {
          const c = call({ status, request_id: requestId, started_at: started ? at : null, arguments: argsText, name });
          const message = toChatMessage(row, [c]);
          expect(ChatMessageDto.safeParse(message).success).toBe(true);
          const [dto] = message.tool_calls ?? [];
          expect(typeof dto?.label_short).toBe('string');
          if (!requestId) expect(dto?.approval).toBeUndefined();
          if (dto?.approval) expect(dto.approval.request_id).toBe(R1);
        },
      ),
      { seed: SEED, numRuns: 1000 },
    );
  });
});
