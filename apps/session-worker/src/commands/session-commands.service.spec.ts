/**
 * SessionCommandsService with faked repositories and lease: what the user reads after /sethome,
 * /resettools and /clear, that /clear and /resettools are refused (not half-applied) while a turn
 * holds the conversation, and that an unknown command says so. (/context builds a PgSessionStore
 * on the DataSource itself, so it is covered by the integration and e2e tests.)
 */
import { Actor, SessionCommandRequest, WORKER_COMMANDS } from '@skald/contracts';
import { newTestService } from '@skald/testing/unit';
import { SessionsRepository } from '../sessions/sessions.repository';
import { UserSettingsRepository } from '../settings/user-settings.repository';
import { TurnDriver } from '../turns/turn-driver';
import { SessionCommandsService } from './session-commands.service';

const actor = { userId: 'u1', role: 'user' } as Actor;

function setUp(store: Record<string, unknown> | null) {
  const t = newTestService(SessionCommandsService);
  t.mock(SessionsRepository).active.mockResolvedValue({ id: 's1' } as never);
  t.mock(TurnDriver).withLease.mockImplementation(async (_s, fn) =>
    store === null ? null : fn(store as never, new AbortController().signal, 'user'),
  );
  return t;
}

const conversation = (turnState: string, messages: Array<{ isSynthetic: boolean }>) => {
  const commit = jest.fn();
  return {
    commit,
    getSession: async () => ({ turnState }),
    listActiveFrames: async () => [{ id: 'root', depth: 0 }],
    listMessages: async () => messages,
  };
};

describe('SessionCommandsService', () => {
  it('/sethome makes the source the home of notifications', async () => {
    const { sut, mock } = setUp({});
    expect(await sut.run(actor, 'telegram', '/sethome', '')).toEqual({
      command: '/sethome',
      content: 'Notifications now go to this source (telegram).',
    });
    expect(mock(UserSettingsRepository).setHomeSource).toHaveBeenCalledWith({ userId: 'u1' }, 'telegram');
  });

  it('/clear closes the root frame and counts the messages the user saw', async () => {
    const store = conversation('finished', [{ isSynthetic: false }, { isSynthetic: true }, { isSynthetic: false }]);
    const { content } = await setUp(store).sut.run(actor, 'web', '/clear', '');
    expect(content).toMatch(/^Cleared the conversation \(2 messages\)/);
    expect(store.commit).toHaveBeenCalledWith('s1', [{ kind: 'closeFrame', frameId: 'root' }], []);
  });

  it('/clear is refused while a turn runs, and changes nothing', async () => {
    const store = conversation('running', [{ isSynthetic: false }]);
    expect((await setUp(store).sut.run(actor, 'web', '/clear', '')).content).toMatch(/^A turn is running/);
    expect(store.commit).not.toHaveBeenCalled();
    expect((await setUp(null).sut.run(actor, 'web', '/clear', '')).content).toMatch(/^A turn is running/);
  });

  it('/clear on an empty conversation says so', async () => {
    const store = conversation('finished', []);
    store.listActiveFrames = async () => [];
    expect((await setUp(store).sut.run(actor, 'web', '/clear', '')).content).toBe('The conversation is already empty.');
  });

  it('/resettools names the groups it deactivated, or says none was active', async () => {
    const revoke = jest.fn().mockResolvedValueOnce(['github', 'files']).mockResolvedValueOnce([]);
    const { sut } = setUp({ revokeAllGrants: revoke });
    expect((await sut.run(actor, 'web', '/resettools', '')).content).toMatch(
      /^Deactivated 2 tool groups: github, files\./,
    );
    expect((await sut.run(actor, 'web', '/resettools', '')).content).toBe(
      'No tool groups were active in this conversation.',
    );
    expect(revoke).toHaveBeenCalledWith('s1');
  });

  it('takes only the commands the worker answers: any other is refused at the request', () => {
    const commandRefused = (command: string) =>
      SessionCommandRequest.safeParse({ actor, source: 'web', command }).error?.issues.some(
        (i) => i.path[0] === 'command',
      ) ?? false;
    expect(commandRefused('/frobnicate')).toBe(true);
    expect(commandRefused('/help')).toBe(true); // the gateway's
    for (const command of WORKER_COMMANDS) expect([command, commandRefused(command)]).toEqual([command, false]);
  });
});
