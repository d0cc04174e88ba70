/**
 * SessionsService.replay with faked repositories: what a reconnecting client is sent — nothing for
 * a session that is not theirs, the events after its last seq in pages, and the state the events
 * end in (running, waiting for an approval or an answer, or held back by the user's turn cap).
 */
import { Actor, REPLAY_PAGE_EVENTS } from '@skald/contracts';
import { newTestService } from '@skald/testing/unit';
import { SessionsRepository } from './sessions.repository';
import { SessionsService } from './sessions.service';
import { TurnStateRepository } from './turn-state.repository';
import { sessionRow } from '../testing-fixtures/session-row';
import type { SessionsRow } from '@skald/persistence';

const actor = { userId: 'u1', role: 'user' } as Actor;

function setUp(session: Partial<SessionsRow> | null) {
  const t = newTestService(SessionsService);
  const repo = t.mock(SessionsRepository);
  repo.find.mockResolvedValue(session && sessionRow(session));
  repo.eventsAfter.mockImplementation(async (_s, after, head, limit) =>
    Array.from({ length: Math.min(head - after, limit) }, (_, i) => ({
      seq: String(after + i + 1),
      payload: { type: 'text_delta', delta: 'x' },
    })),
  );
  repo.heldBackByTurnCap.mockResolvedValue(false);
  Object.defineProperty(repo, 'maxTurns', { value: 2 });
  const turnState = t.mock(TurnStateRepository);
  turnState.awaitingCalls.mockResolvedValue([]);
  return { ...t, repo, turnState };
}

describe('SessionsService.replay', () => {
  it("answers not_found for another user's session", async () => {
    const { sut } = setUp(null);
    await expect(sut.replay(actor, 's1', 0)).rejects.toMatchObject({ body: { code: 'not_found' } });
  });

  it('sends the events after the client’s seq, stamped with the session and their seq', async () => {
    const { sut } = setUp({ last_seq: '5', turn_state: 'finished' });
    const r = await sut.replay(actor, 's1', 3);
    expect(r.events.map((e) => e.seq)).toEqual([4, 5]);
    expect(r.events[0]).toMatchObject({ session_id: 's1', type: 'text_delta' });
    expect(r).toMatchObject({ last_seq: 5, running: false });
    expect(r).not.toHaveProperty('waiting');
  });

  it('sends nothing to a client that is up to date, or that names no seq', async () => {
    const { sut, repo } = setUp({ last_seq: '5', turn_state: 'finished' });
    expect((await sut.replay(actor, 's1', 5)).events).toEqual([]);
    expect((await sut.replay(actor, 's1', undefined)).events).toEqual([]);
    expect(repo.eventsAfter).not.toHaveBeenCalled();
  });

  it('cuts a long replay into pages, the client asking on from the last seq sent', async () => {
    const { sut } = setUp({ last_seq: String(REPLAY_PAGE_EVENTS + 50), turn_state: 'finished' });
    const r = await sut.replay(actor, 's1', 0);
    expect(r).toMatchObject({ has_more: true, running: true, last_seq: REPLAY_PAGE_EVENTS });
    expect(r.events).toHaveLength(REPLAY_PAGE_EVENTS);
  });

  it('says what a running turn waits for: an approval, or only answers to questions', async () => {
    const { sut, turnState } = setUp({ last_seq: '1', turn_state: 'parked' });
    turnState.awaitingCalls.mockResolvedValueOnce([
      { name: 'execute_cmd' },
      { name: 'ask_user_clarification' },
    ] as never);
    expect(await sut.replay(actor, 's1', 0)).toMatchObject({ running: true, waiting: 'approval' });
    turnState.awaitingCalls.mockResolvedValueOnce([{ name: 'ask_user_clarification' }] as never);
    expect(await sut.replay(actor, 's1', 0)).toMatchObject({ running: true, waiting: 'clarification' });
  });

  it("says a finished session's queued message waits for one of the user's turn slots", async () => {
    const { sut, repo } = setUp({ last_seq: '1', turn_state: 'finished', holds_turn_slot: false });
    repo.heldBackByTurnCap.mockResolvedValue(true);
    expect(await sut.replay(actor, 's1', 0)).toMatchObject({ running: false, waiting: 'turn_slot', limit: 2 });
  });
});
