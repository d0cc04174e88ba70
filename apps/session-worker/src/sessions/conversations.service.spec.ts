/**
 * ConversationsService with faked repositories, bus and lease: a foreign or missing conversation
 * answers not_found and nothing is stopped; a delete stops the turn first and deletes under the
 * lease, and deleting the active conversation gives its source a fresh one; reopening a conversation
 * tells the user's sockets only when the active one changed.
 */
import { Actor, topicOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { SubmitService } from '../submit/submit.service';
import { TurnDriver } from '../turns/turn-driver';
import { ConversationsRepository } from './conversations.repository';
import { ConversationsService } from './conversations.service';
import { SessionsRepository } from './sessions.repository';
import { sessionRow } from '../testing-fixtures/session-row';

const actor = { userId: 'u1', role: 'user' } as Actor;

function setUp() {
  const t = newTestService(ConversationsService, [fake(Bus, { call: jest.fn(), publish: jest.fn() })]);
  const order: string[] = [];
  const submit = t.mock(SubmitService);
  submit.cancel.mockImplementation(async () => void order.push('cancel') as never);
  t.mock(Bus).call.mockResolvedValue({});
  t.mock(SessionsRepository).find.mockResolvedValue(sessionRow({ id: 's1' }));
  const repo = t.mock(ConversationsRepository);
  repo.delete.mockImplementation(async () => {
    order.push('delete');
    return { wasActive: false, source: 'web' };
  });
  t.mock(TurnDriver).withLease.mockImplementation(async (_s, fn) =>
    fn({} as never, new AbortController().signal, 'user'),
  );
  return { ...t, order, submit, repo, bus: t.mock(Bus) };
}

describe('ConversationsService', () => {
  it('renames with the title trimmed; a foreign conversation is not found', async () => {
    const { sut, repo } = setUp();
    repo.rename.mockResolvedValueOnce({ id: 's1', title: 'Keys' }).mockResolvedValueOnce(null);
    expect(await sut.rename(actor, 's1', '  Keys ')).toEqual({ id: 's1', title: 'Keys' });
    expect(repo.rename).toHaveBeenCalledWith({ userId: 'u1', sessionId: 's1' }, 'Keys');
    await expect(sut.rename(actor, 'other', 'x')).rejects.toMatchObject({ body: { code: 'not_found' } });
  });

  it("stops a conversation's turn before deleting it under the lease", async () => {
    const { sut, order, submit, bus } = setUp();
    expect(await sut.delete(actor, 's1')).toEqual({ deleted: true });
    expect(order).toEqual(['cancel', 'delete']);
    expect(bus.call).toHaveBeenCalledWith('approval.reset_session', { actor, session_id: 's1' });
    expect(submit.activeSession).not.toHaveBeenCalled();
  });

  it('gives the source a fresh conversation when the deleted one was active', async () => {
    const { sut, repo, submit } = setUp();
    repo.delete.mockResolvedValue({ wasActive: true, source: 'telegram' });
    await sut.delete(actor, 's1');
    expect(submit.activeSession).toHaveBeenCalledWith(actor, 'telegram', true);
  });

  it('answers not_found for a conversation that is not the caller’s, stopping nothing', async () => {
    const { sut, submit, mock } = setUp();
    mock(SessionsRepository).find.mockResolvedValue(null);
    await expect(sut.delete(actor, 'other')).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(submit.cancel).not.toHaveBeenCalled();
  });

  it('tells the sockets of the source when a reopened conversation became the active one, not otherwise', async () => {
    const { sut, repo, bus, mock } = setUp();
    repo.activate.mockResolvedValueOnce({ changed: true, source: 'web', clientPin: 'local' });
    expect(await sut.activate(actor, 's2')).toEqual({ session_id: 's2', source: 'web' });
    expect(mock(LlmUsageRepository).setPin).toHaveBeenCalledWith({ userId: 'u1', source: 'web' }, 'local');
    expect(bus.publish).toHaveBeenCalledWith(topicOf('userEvents', 'u1'), {
      type: 'new_session',
      session_id: 's2',
      source: 'web',
    });
    repo.activate.mockResolvedValueOnce({ changed: false, source: 'web', clientPin: null });
    await sut.activate(actor, 's2');
    expect(bus.publish).toHaveBeenCalledTimes(1);
  });
});
