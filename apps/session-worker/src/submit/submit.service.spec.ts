/**
 * SubmitService with a faked inbox, driver, bus and repositories: a message is stored before it is
 * acknowledged; with the lease taken by the message this worker drives at once (no doorbell), else
 * the doorbell rings; a retried message changes nothing twice; `interrupt` stops the running turn
 * and lets an unused lease go if the stop fails; `/new` moves queued deliveries home before it
 * stops the old conversation, and tells the source's sockets; `/stop` of a foreign session is
 * not found.
 */
import { Actor, topicOf, topicSubject, TOPICS } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { fake, newTestService } from '@skald/testing/unit';
import { DeliveryRouting } from '../jobs/delivery-routing.service';
import { LeaseRepository } from '../lease/lease.repository';
import { SessionsRepository } from '../sessions/sessions.repository';
import { TurnStateRepository } from '../sessions/turn-state.repository';
import { TurnDriver } from '../turns/turn-driver';
import { InboxRepository } from './inbox.repository';
import { Submission, SubmitService } from './submit.service';
import { sessionRow } from '../testing-fixtures/session-row';

const actor = { userId: 'u1', role: 'user' } as Actor;
const message = (over: Partial<Submission> = {}): Submission => ({
  actor,
  source: 'web',
  clientMessageId: 'k1',
  content: 'hello',
  delivery: 'queue',
  isSynthetic: false,
  ...over,
});
const nextTick = () => new Promise((r) => setImmediate(r));

function setUp() {
  const t = newTestService(SubmitService, [fake(Bus, { call: jest.fn(), publish: jest.fn() })]);
  const inbox = t.mock(InboxRepository);
  const driver = t.mock(TurnDriver);
  const bus = t.mock(Bus);
  const turnState = t.mock(TurnStateRepository);
  turnState.requestStop.mockResolvedValue(true);
  driver.looksAgain.mockReturnValue(false);
  driver.drive.mockResolvedValue(undefined);
  driver.driveWith.mockResolvedValue(undefined);
  const subjects = () => bus.publish.mock.calls.map((c) => topicSubject(c[0]));
  return { ...t, inbox, driver, bus, turnState, subjects };
}

describe('SubmitService.submit', () => {
  it('drives at once with the lease the message took, without ringing the doorbell', async () => {
    const { sut, inbox, driver, subjects } = setUp();
    const lease = { sessionId: 's1' };
    inbox.submitToActive.mockResolvedValue({ sessionId: 's1', messageId: 'm1', duplicate: false, lease } as never);
    expect(await sut.submit(message())).toEqual({
      session_id: 's1',
      message_id: 'm1',
      client_message_id: 'k1',
      duplicate: false,
      leased: true,
    });
    await nextTick();
    expect(driver.driveWith).toHaveBeenCalledWith(lease, null);
    expect(subjects()).not.toContain(TOPICS.sessionWake.subject('s1'));
  });

  it('rings the doorbell when another worker holds the session', async () => {
    const { sut, inbox, subjects } = setUp();
    inbox.submitToActive.mockResolvedValue({
      sessionId: 's1',
      messageId: 'm1',
      duplicate: false,
      lease: null,
    });
    await sut.submit(message());
    expect(subjects()).toEqual([TOPICS.sessionWake.subject('s1')]);
  });

  it('changes nothing for a retried message', async () => {
    const { sut, inbox, turnState, subjects } = setUp();
    inbox.submitToActive.mockResolvedValue({ sessionId: 's1', messageId: 'm1', duplicate: true, lease: null });
    expect(await sut.submit(message({ delivery: 'interrupt' }))).toMatchObject({ duplicate: true, leased: false });
    expect(turnState.requestStop).not.toHaveBeenCalled();
    expect(subjects()).toEqual([]);
  });

  it('stops the running turn for an interrupt, and lets the unused lease go when the stop fails', async () => {
    const { sut, inbox, turnState, subjects, mock } = setUp();
    inbox.submitToActive.mockResolvedValue({
      sessionId: 's1',
      messageId: 'm1',
      duplicate: false,
      lease: null,
    });
    await sut.submit(message({ delivery: 'interrupt' }));
    expect(subjects()[0]).toBe(TOPICS.sessionCancel.subject('s1'));
    const lease = { sessionId: 's1' };
    inbox.submitToActive.mockResolvedValue({ sessionId: 's1', messageId: 'm2', duplicate: false, lease } as never);
    turnState.requestStop.mockRejectedValue(new Error('db down'));
    const leases = mock(LeaseRepository);
    leases.release.mockResolvedValue(undefined);
    await expect(sut.submit(message({ delivery: 'interrupt' }))).rejects.toThrow('db down');
    expect(leases.release).toHaveBeenCalledWith(lease);
  });

  it('creates the session when the source has none, recording the role, before storing the message', async () => {
    const { sut, inbox, turnState, mock } = setUp();
    inbox.submitToActive.mockResolvedValue(null);
    mock(SessionsRepository).active.mockResolvedValue({ id: 'new' } as never);
    inbox.store.mockResolvedValue({ sessionId: 'new', messageId: 'm1', duplicate: false });
    expect(await sut.submit(message())).toMatchObject({ session_id: 'new', leased: false });
    expect(turnState.recordOwnerRole).toHaveBeenCalledWith('new', 'user');
    expect(inbox.store).toHaveBeenCalledWith(expect.objectContaining({ sessionId: 'new', clientMessageId: 'k1' }));
  });
});

describe('SubmitService /new and /stop', () => {
  it('/new moves queued deliveries home before stopping the old conversation, then tells the sockets', async () => {
    const { sut, bus, turnState, mock } = setUp();
    const order: string[] = [];
    mock(SessionsRepository).active.mockResolvedValue({ id: 's2', created: true, previousId: 's1' });
    mock(DeliveryRouting).rehomeQueued.mockImplementation(async () => {
      order.push('rehome');
      return 'home';
    });
    turnState.requestStop.mockImplementation(async () => {
      order.push('stop');
      return true;
    });
    bus.call.mockResolvedValue({});
    expect(await sut.activeSession(actor, 'web', true)).toEqual({ id: 's2', created: true });
    expect(order).toEqual(['rehome', 'stop']);
    expect(bus.call).toHaveBeenCalledWith('approval.reset_session', { actor, session_id: 's1' });
    expect(bus.publish).toHaveBeenCalledWith(topicOf('userEvents', 'u1'), {
      type: 'new_session',
      session_id: 's2',
      source: 'web',
    });
  });

  it('/stop of a session that is not the caller’s is not found and stops nothing', async () => {
    const { sut, turnState, mock } = setUp();
    mock(SessionsRepository).find.mockResolvedValue(null);
    await expect(sut.cancel(actor, 's9')).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(turnState.requestStop).not.toHaveBeenCalled();
  });

  it('/stop of a finished turn answers cancelled: false and wakes nobody', async () => {
    const { sut, turnState, bus, mock } = setUp();
    mock(SessionsRepository).find.mockResolvedValue(sessionRow({ id: 's1' }));
    turnState.requestStop.mockResolvedValue(false);
    expect(await sut.cancel(actor, 's1')).toEqual({ cancelled: false });
    expect(bus.publish).not.toHaveBeenCalled();
  });
});
