import fc from 'fast-check';
import type { TurnOutcome } from '@skald/agent-loop';
import { NotifyEventRequest } from '@skald/contracts';
import { jobRunOf, turnFinishedNotice } from './turn-finished-notice';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
/** Any character, and what Postgres text or a phone cannot carry: NUL, lone surrogates, escapes. */
const POISON_UNIT = fc.oneof(
  fc.constantFrom('\0', '\uD800', '\uDFFF', '\u001b'),
  fc.string({ unit: 'binary', minLength: 1, maxLength: 1 }),
);
const USER = '00000000-0000-4000-8000-000000000001';
const SESSION = '00000000-0000-4000-8000-000000000002';
const conversation = { id: SESSION, userId: USER, isEphemeral: false };
const jobSession = { id: SESSION, userId: USER, isEphemeral: true };

const final = (content: string): TurnOutcome => ({
  kind: 'final',
  messageId: 'm',
  content,
  reasoningContent: null,
  inputTokens: null,
  outputTokens: null,
  truncated: false,
  toolCalls: [],
});

const turn = (turnId: string | null = 'turn-1') => ({ turnId, cause: 'input' as const });

describe("a turn's end and its turn_finished notice", () => {
  it('a conversation whose turn answered is told, keyed by the turn', () => {
    expect(turnFinishedNotice(conversation, turn(), final('Done:\nthe build is green.'))).toEqual({
      user_id: USER,
      event_key: 'turn-finished:turn-1',
      kind: 'turn_finished',
      summary: 'The agent finished: Done: the build is green.',
      refs: { session_id: SESSION },
    });
    expect(turnFinishedNotice(conversation, turn(), { kind: 'exhausted', rounds: 40 })?.summary).toBe(
      'The agent stopped after 40 rounds without a final answer',
    );
    expect(turnFinishedNotice(conversation, turn(), { kind: 'failed', error: 'no LLM answered' })?.summary).toBe(
      "The agent's turn failed: no LLM answered",
    );
  });

  it("a job session's turn is its job's (job_finished), never also turn_finished", () => {
    expect(jobRunOf(jobSession)).toBe(SESSION);
    expect(jobRunOf(conversation)).toBeNull();
    for (const o of [final('x'), { kind: 'exhausted', rounds: 1 }, { kind: 'failed', error: 'e' }] as TurnOutcome[])
      expect(turnFinishedNotice(jobSession, turn(), o)).toBeNull();
  });

  it("a conversation's turn that a job's delivered result started is the job's news (job_finished), not turn_finished", () => {
    expect(turnFinishedNotice(conversation, { turnId: 'turn-1', cause: 'job_delivery' }, final('x'))).toBeNull();
  });

  it('a stopped, parked or idle turn, or one without an id, tells nobody', () => {
    expect(turnFinishedNotice(conversation, turn(), { kind: 'cancelled' })).toBeNull();
    expect(turnFinishedNotice(conversation, turn(), { kind: 'parked', toolCallId: 'c', requestId: 'r' })).toBeNull();
    expect(turnFinishedNotice(conversation, turn(), { kind: 'idle' })).toBeNull();
    expect(turnFinishedNotice(conversation, turn(null), final('x'))).toBeNull();
  });

  it('whatever the model wrote, the event is valid and its summary one bounded line (generated)', () => {
    console.log(`turn notice property seed: ${SEED}`);
    fc.assert(
      fc.property(fc.string({ unit: POISON_UNIT, maxLength: 5_000 }), fc.boolean(), (text, failed) => {
        const n = turnFinishedNotice(conversation, turn(), failed ? { kind: 'failed', error: text } : final(text));
        expect(n).not.toBeNull();
        expect(NotifyEventRequest.safeParse(n).success).toBe(true);
        expect(n?.summary).not.toMatch(/[\n\r]/);
        expect(n?.summary.length).toBeLessThanOrEqual(240);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });
});
