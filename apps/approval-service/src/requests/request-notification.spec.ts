import fc from 'fast-check';
import { NotifyEventRequest } from '@skald/contracts';
import { requestNotification } from './request-notification';
import type { StoredRequest } from './requests.repository';
import { storedRequest } from '../testing-fixtures/stored-request';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
/** Any character, and what Postgres text or a phone cannot carry: NUL, lone surrogates, escapes. */
const POISON_UNIT = fc.oneof(
  fc.constantFrom('\0', '\uD800', '\uDFFF', '\u001b'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);

const row = (over: Partial<StoredRequest> = {}): StoredRequest =>
  storedRequest({
    id: 'req-1',
    toolCallId: 'call_1',
    sessionId: 's-1',
    userId: '00000000-0000-4000-8000-000000000001',
    arguments: JSON.stringify({ command: 'make deploy' }),
    turnId: null,
    gateContext: null,
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

  it("a job session's approval or question is the job's: job_needs_human, same key, never both", () => {
    const run = '00000000-0000-4000-8000-0000000000aa';
    const approval = requestNotification(row(), run);
    expect(approval).toEqual({
      user_id: row().userId,
      event_key: 'human-request:req-1',
      kind: 'job_needs_human',
      summary: 'A job needs approval: execute_cmd make deploy',
      refs: { session_id: 's-1', tool_call_id: 'call_1', request_id: 'req-1', tool_name: 'execute_cmd', run_id: run },
    });
    const question = requestNotification(
      row({ kind: 'clarification', question: { title: 'B', question: 'Which branch?', suggested_answers: [] } }),
      run,
    );
    expect(question).toMatchObject({ kind: 'job_needs_human', summary: "A job's agent asks: Which branch?" });
    // The same request outside a job keeps its own kind under the same key: one request, one event.
    expect(requestNotification(row()).event_key).toBe(approval.event_key);
  });

  it('whatever the model sent, the event is valid and its summary one bounded line (generated)', () => {
    console.log(`request notification property seed: ${SEED}`);
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: POISON_UNIT, maxLength: 800 }),
          fc.jsonValue({ maxDepth: 2 }).map((v) => JSON.stringify(v)),
        ),
        fc.string({ unit: POISON_UNIT, maxLength: 800 }),
        fc.boolean(),
        fc.option(fc.uuid()),
        (args, question, clarification, jobRun) => {
          const e = requestNotification(
            row(
              clarification
                ? { kind: 'clarification', question: { title: 't', question, suggested_answers: [] } }
                : { arguments: args },
            ),
            jobRun,
          );
          expect(NotifyEventRequest.safeParse(e).success).toBe(true);
          expect(e.summary).not.toMatch(/[\n\r]/);
          expect(e.summary.length).toBeLessThanOrEqual(340);
        },
      ),
      { seed: SEED, numRuns: 300 },
    );
  });
});
