/**
 * ActionTokensService with faked repositories and resolver: a token is stored by hash only, bound
 * to the call's tool and arguments, and redeemed as its own user through the resolve path with the
 * channel `push`; every token that cannot act gets the one refusal.
 */
import { newTestService } from '@skald/testing/unit';
import { RequestsRepository } from '../requests/requests.repository';
import { RequestsService } from '../requests/requests.service';
import { storedRequest } from '../testing-fixtures/stored-request';
import { ActionTokensRepository } from './action-tokens.repository';
import { ActionTokensService, callHashOf, tokenHashOf } from './action-tokens.service';

function setUp(row = storedRequest()) {
  const t = newTestService(ActionTokensService, []);
  const tokens = t.mock(ActionTokensRepository);
  const requests = t.mock(RequestsRepository);
  const resolver = t.mock(RequestsService);
  requests.findById.mockResolvedValue(row);
  tokens.insert.mockResolvedValue(new Date('2026-01-01T00:15:00Z'));
  tokens.sweep.mockResolvedValue(undefined);
  resolver.resolve.mockResolvedValue({
    request_id: row.id,
    tool_call_id: row.toolCallId,
    session_id: row.sessionId,
    status: 'approved',
    note: null,
    answer: null,
  });
  return { service: t.sut, tokens, requests, resolver, row };
}

describe('ActionTokensService', () => {
  it('mints 32 random bytes, stores only their hash, bound to the call', async () => {
    const { service, tokens, row } = setUp();
    const minted = await service.mint({ request_id: row.id, user_id: row.userId });
    expect(Buffer.from(minted.token, 'base64url')).toHaveLength(32);
    const stored = tokens.insert.mock.calls[0][0];
    expect(stored).toMatchObject({ requestId: row.id, userId: row.userId, callHash: callHashOf(row) });
    expect(stored.tokenHash).toBe(tokenHashOf(minted.token));
    expect(JSON.stringify(stored)).not.toContain(minted.token);
    expect(stored.ttlMs).toBe(15 * 60_000);
  });

  it('mints nothing for an answered request or a question', async () => {
    await expect(
      setUp(storedRequest({ status: 'approved' })).service.mint({ request_id: 'q1', user_id: 'u1' }),
    ).rejects.toMatchObject({ body: { code: 'conflict' } });
    await expect(
      setUp(storedRequest({ kind: 'clarification' })).service.mint({ request_id: 'q1', user_id: 'u1' }),
    ).rejects.toMatchObject({ body: { code: 'not_found' } });
  });

  it("redeems as the token's user, through resolve, channel push", async () => {
    const { service, tokens, resolver, row } = setUp();
    tokens.use.mockResolvedValue({ request_id: row.id, user_id: row.userId, call_hash: callHashOf(row) });
    expect(await service.redeem({ token: 'abc', action: 'approve' })).toEqual({
      status: 'approved',
      tool_name: row.toolName,
    });
    expect(tokens.use).toHaveBeenCalledWith(tokenHashOf('abc'));
    expect(resolver.resolve).toHaveBeenCalledWith({
      actor: { userId: row.userId, role: 'user' },
      request_id: row.id,
      action: 'approve',
      channel: 'push',
    });
  });

  it('refuses with one message: unknown or used, or a call that changed', async () => {
    const { service, tokens, resolver, row } = setUp();
    tokens.use.mockResolvedValueOnce(null);
    const unknown = await service.redeem({ token: 'abc', action: 'approve' }).catch((e: unknown) => e);
    tokens.use.mockResolvedValueOnce({ request_id: row.id, user_id: row.userId, call_hash: 'other' });
    const changed = await service.redeem({ token: 'abc', action: 'reject' }).catch((e: unknown) => e);
    expect(unknown).toMatchObject({ body: { code: 'forbidden' } });
    expect(changed).toEqual(unknown);
    expect(resolver.resolve).not.toHaveBeenCalled();
  });
});
