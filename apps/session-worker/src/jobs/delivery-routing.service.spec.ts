/**
 * DeliveryRouting with faked repositories: a finished task's delivery queued in a conversation the
 * user reset moves to the active conversation of their home source, and nothing moves when the
 * reset conversation is the home one.
 */
import { newTestService } from '@skald/testing/unit';
import { SessionsRepository } from '../sessions/sessions.repository';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import { DeliveryRouting } from './delivery-routing.service';
import { JobSessionsRepository } from './job-sessions.repository';

function setUp(homeSessionId: string, moved: number) {
  const t = newTestService(DeliveryRouting);
  t.mock(UserSettingsRepository).homeSource.mockResolvedValue('telegram');
  t.mock(SessionsRepository).active.mockResolvedValue({ id: homeSessionId } as never);
  t.mock(JobSessionsRepository).moveQueuedDeliveries.mockResolvedValue(moved);
  return t;
}

describe('DeliveryRouting', () => {
  it("finds the active session of the user's home source", async () => {
    const { sut, mock } = setUp('home', 0);
    expect(await sut.homeSession('u1')).toBe('home');
    expect(mock(SessionsRepository).active).toHaveBeenCalledWith({ userId: 'u1', source: 'telegram' });
  });

  it('moves the deliveries queued in a reset conversation home, and names home to wake it', async () => {
    const { sut, mock } = setUp('home', 2);
    expect(await sut.rehomeQueued('u1', 'old')).toBe('home');
    expect(mock(JobSessionsRepository).moveQueuedDeliveries).toHaveBeenCalledWith({
      userId: 'u1',
      fromSessionId: 'old',
      toSessionId: 'home',
    });
  });

  it('wakes nothing when nothing was queued, or when the reset conversation is the home one', async () => {
    expect(await setUp('home', 0).sut.rehomeQueued('u1', 'old')).toBeNull();
    const same = setUp('home', 5);
    expect(await same.sut.rehomeQueued('u1', 'home')).toBeNull();
    expect(same.mock(JobSessionsRepository).moveQueuedDeliveries).not.toHaveBeenCalled();
  });
});
