import fc from 'fast-check';
import { NotifyEventRequest } from '@skald/contracts';
import { requestNotification } from './request-notification';
import type { StoredRequest } from './requests.repository';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const row = (over: Partial<StoredRequest> = {}): StoredRequest => ({
  id: 'req-1',
  kind: 'approval',
  toolCallId: 'call_1',
  sessionId: 's-1',
  userId: '00000000-0000-4000-8000-000000000001',
  source: 'web',
  toolName: 'execute_cmd',
  arguments: JSON.stringify({ command: 'make deploy' }),
  preview: null,
  question: null,
  landsAt: null,
  status: 'pending',
  note: null,
  answer: null,
  actorUserId: null,
  channel: null,
  bypass: null,
  cancelReason: null,
  turnId: null,
  gateContext: null,
  editedArguments: null,
  editDiff: null,
  createdAt: new Date(),
  resolvedAt: null,
  ...over,
});

describe('the notification of a pending human request', () => {
  it('names the call by its command or path, keyed by the request so a re-ask notifies once', () => {
    expect(requestNotification(row())).toEqual({
      user_id: row().userId,
      event_key: 'human-request:req-1',
      kind: 'approval_requested',
      summary: 'Approval needed: execute_cmd make deploy',
      refs: { session_id: 's-1', tool_call_id: 'call_1', request_id: 'req-1', tool_name: 'execute_cmd' },
    });
    expect(
      requestNotification(row({ toolName: 'write_file', arguments: JSON.stringify({ path: 'a.md', content: 'x' }) }))
        .summary,
    ).toBe('Approval needed: write_file a.md');
    expect(requestNotification(row({ arguments: '{not json' })).summary).toBe('Approval needed: execute_cmd {not json');
  });

  it('a question is asked in its own words', () => {
    const q = requestNotification(
      row({ kind: 'clarification', question: { title: 'Branch', question: 'Which\nbranch?', suggested_answers: [] } }),
    );
    expect(q).toMatchObject({ kind: 'question_asked', summary: 'The agent asks: Which branch?' });
  });

  it('whatever the model sent, the event is valid and its summary one bounded line (generated)', () => {
    console.log(`request notification property seed: ${SEED}`);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 800 }),
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
        ),
        fc.string({ unit: 'binary', maxLength: 800 }),
        fc.boolean(),
        (args, question, clarification) => {
          const e = requestNotification(
            row(
              clarification
                ? { kind: 'clarification', question: { title: 't', question, suggested_answers: [] } }
                : { arguments: args },
            ),
          );
          expect(NotifyEventRequest.safeParse(e).success).toBe(true);
          expect(e.summary).not.toMatch(/[\n\r]/);
          expect(e.summary.length).toBeLessThanOrEqual(330);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});
