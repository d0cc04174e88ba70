/**
 * AuthService with a faked user store, throttle and hasher (the password check is a string
 * comparison here; the real hashes have their own specs): a login hands out a token that
 * authenticates until the user's token version moves, a wrong password or a disabled account is
 * the same "wrong email or password", an unknown email still costs a hash, and a password change
 * needs the current password and revokes every session.
 */
import { Bus } from '@skald/messaging/bus-port';
import type { User } from './users.repository';
import { fake, newTestService } from '@skald/testing/unit';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { AuthService, Principal } from './auth.service';
import { LoginSessionsRepository } from './login-sessions.repository';
import { LoginThrottle } from './login-throttle';
import { Hashing, PasswordHasher } from './password-hasher';
import { UsersRepository } from './users.repository';

const U1 = '00000000-0000-4000-8000-000000000001';
const U2 = '00000000-0000-4000-8000-000000000002';

const user = (over: Partial<User> = {}): User =>
  ({
    id: U1,
    email: 'ada@example.com',
    passwordHash: 'hash:right',
    role: 'user',
    disabled: false,
    tokenVersion: 1,
    ...over,
  }) as User;

function setUp(stored: User | null = user(), config: Partial<GatewayConfig> = {}) {
  const hashing: jest.Mocked<Hashing> = {
    verify: jest.fn(async (pw: string, h: string) => ({ ok: h === `hash:${pw}`, needsRehash: false })),
    hash: jest.fn(async (pw: string) => `hash:${pw}`),
  };
  const t = newTestService(AuthService, [
    fake(GATEWAY_CONFIG, { SKALD_JWT_SECRET: 'x'.repeat(32), SKALD_TOKEN_TTL_SECS: 3600, ...config } as GatewayConfig),
    fake(Bus, { publish: jest.fn() }),
  ]);
  t.mock(PasswordHasher).withSlot.mockImplementation(async (work) => work(hashing));
  const throttle = t.mock(LoginThrottle);
  throttle.begin.mockResolvedValue({} as never);
  const users = t.mock(UsersRepository);
  users.findByEmail.mockResolvedValue(stored);
  users.findById.mockResolvedValue(stored);
  // the sessions table: what was started is live until ended
  const live = new Map<string, string>();
  const sessions = t.mock(LoginSessionsRepository);
  sessions.start.mockImplementation(async (s) => void live.set(s.id, s.userId));
  sessions.end.mockImplementation(
    async ({ userId, sessionId }) => live.get(sessionId) === userId && live.delete(sessionId),
  );
  sessions.userWithSession.mockImplementation(async (userId, sessionId) => {
    const u = await users.findById(userId);
    return u ? { user: u, sessionLive: live.get(sessionId) === userId } : null;
  });
  sessions.liveIds.mockImplementation(async (ids) => new Set(ids.filter((id) => live.has(id))));
  return { ...t, hashing, throttle, users, sessions };
}

const principalOf = (u: User, over: Partial<Principal> = {}): Principal => ({
  actor: { userId: u.id, role: u.role },
  expiresAt: null,
  tokenVersion: u.tokenVersion,
  apiTokenId: null,
  loginSessionId: null,
  ...over,
});

describe('AuthService login', () => {
  it('hands out a token that authenticates as the user', async () => {
    const { sut, throttle } = setUp();
    const r = await sut.login('ada@example.com', 'right', '10.0.0.1');
    expect(r.user).toEqual({ id: U1, email: 'ada@example.com', role: 'user' });
    expect(await sut.authenticate(r.token)).toMatchObject({ actor: { userId: U1, role: 'user' }, tokenVersion: 1 });
    expect(throttle.succeeded).toHaveBeenCalledTimes(1);
  });

  it('answers a wrong password and a disabled account alike, and counts them as failures', async () => {
    const { sut, throttle } = setUp();
    await expect(sut.login('ada@example.com', 'wrong', 'a')).rejects.toThrow('wrong email or password');
    const disabled = setUp(user({ disabled: true }));
    await expect(disabled.sut.login('ada@example.com', 'right', 'a')).rejects.toThrow('wrong email or password');
    expect(throttle.succeeded).not.toHaveBeenCalled();
    expect(disabled.throttle.succeeded).not.toHaveBeenCalled();
  });

  it('spends a password check on an unknown email too (no timing tells it apart)', async () => {
    const { sut, hashing } = setUp(null);
    await expect(sut.login('nobody@example.com', 'x', 'a')).rejects.toMatchObject({ code: 'unauthorized' });
    expect(hashing.verify).toHaveBeenCalledTimes(1);
  });

  it('refuses a token once the user’s token version moved (logged out everywhere)', async () => {
    const { sut, users } = setUp();
    const { token } = await sut.login('ada@example.com', 'right', 'a');
    users.findById.mockResolvedValue(user({ tokenVersion: 2 }));
    await expect(sut.authenticate(token)).rejects.toThrow('invalid or expired token');
    await expect(sut.authenticate('not-a-jwt')).rejects.toThrow('invalid or expired token');
  });
});

describe('AuthService sign-out', () => {
  it('ends the session of the token that signs out, and only that one', async () => {
    const { sut, mock, users } = setUp();
    users.findByIds.mockResolvedValue([user()]);
    users.liveTokenIds.mockResolvedValue(new Set());
    const first = await sut.login('ada@example.com', 'right', 'a');
    const second = await sut.login('ada@example.com', 'right', 'a');
    const p = await sut.authenticate(first.token);
    expect(p.loginSessionId).toMatch(/^[0-9a-f-]{36}$/);
    await sut.logout(p);
    await expect(sut.authenticate(first.token)).rejects.toThrow('invalid or expired token');
    expect(await sut.stillValid([p])).toEqual([false]);
    expect((await sut.authenticate(second.token)).actor.userId).toBe(U1);
    expect(mock(Bus).publish).toHaveBeenCalledWith('userRevoked', { user_id: U1 });
  });

  it('revokes the API token that signs out', async () => {
    const { sut, users } = setUp();
    await sut.logout(principalOf(user(), { apiTokenId: 't1' }));
    expect(users.revokeToken).toHaveBeenCalledWith({ userId: U1, tokenId: 't1' });
  });
});

describe('AuthService sessions', () => {
  it('changes the password only with the current one, then revokes every session', async () => {
    const { sut, users, mock } = setUp();
    const p = principalOf(user());
    await expect(sut.changePassword(p, { current: 'wrong', next: 'new' }, 'a')).rejects.toMatchObject({
      code: 'forbidden',
      field: 'current_password',
    });
    expect(users.update).not.toHaveBeenCalled();
    await sut.changePassword(p, { current: 'right', next: 'new' }, 'a');
    expect(users.update).toHaveBeenCalledWith(U1, { passwordHash: 'hash:new' });
    expect(mock(Bus).publish).toHaveBeenCalledWith('userRevoked', {
      user_id: U1,
    });
  });

  it('keeps a connection only while its user, role, token version and API token still hold', async () => {
    const { sut, users } = setUp();
    const u = user();
    users.findByIds.mockResolvedValue([u, user({ id: U2, role: 'user', disabled: true })]);
    users.liveTokenIds.mockResolvedValue(new Set(['t-live']));
    expect(
      await sut.stillValid([
        principalOf(u),
        principalOf(u, { actor: { userId: U1, role: 'admin' } }),
        principalOf(u, { tokenVersion: 0 }),
        principalOf(u, { expiresAt: new Date(Date.now() - 1) }),
        principalOf(u, { apiTokenId: 't-live' }),
        principalOf(u, { apiTokenId: 't-revoked' }),
        principalOf(user({ id: U2 })),
      ]),
    ).toEqual([true, false, false, false, true, false, false]);
  });
});

describe('password login turned off', () => {
  it('refuses a login and a password change before any lookup, count or hash (403)', async () => {
    const { sut: service, users, throttle, hashing } = setUp(user(), { SKALD_PASSWORD_LOGIN: 'off' });
    await expect(service.login('ada@example.com', 'right', '10.0.0.1')).rejects.toMatchObject({ code: 'forbidden' });
    await expect(
      service.changePassword(principalOf(user()), { current: 'right', next: 'another one' }, '10.0.0.1'),
    ).rejects.toMatchObject({ code: 'forbidden' });
    expect(users.findByEmail).not.toHaveBeenCalled();
    expect(throttle.begin).not.toHaveBeenCalled();
    expect(hashing.verify).not.toHaveBeenCalled();
  });
});
