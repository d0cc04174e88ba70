/**
 * The gateway's side of the groups (the session worker's): the login's claim cleaned of hostile
 * names, user ids an admin sends checked against the users before any call, members given their
 * emails (a membership of a user that no longer exists is not shown).
 */
import fc from 'fast-check';
import { GroupName } from '@skald/contracts';
import type { Bus } from '@skald/messaging/bus-port';
import { ApiError } from '../http/api-error';
import type { UsersRepository } from '../auth/users.repository';
import { claimedGroupNames, GroupsService, IDP_GROUPS_MAX } from './groups.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const U1 = 'a0000000-0000-4000-8000-000000000001';
const U2 = 'a0000000-0000-4000-8000-000000000002';

async function status(p: Promise<unknown>): Promise<number | 'ok'> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof ApiError) return e.status;
    throw e;
  }
}

describe('claimedGroupNames', () => {
  it('keeps only group names, trimmed, once each without regard to case, in claim order', () => {
    fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            fc.string(),
            fc.string({ unit: 'binary' }),
            fc.string({ unit: fc.constantFrom('\0', '\uD800', ' ', 'A', 'a', 'é') }),
            fc.anything(),
          ),
          { maxLength: 40 },
        ),
        (claim) => {
          const names = claimedGroupNames(claim);
          expect(names.length).toBeLessThanOrEqual(IDP_GROUPS_MAX);
          for (const n of names) expect(GroupName.safeParse(n).success).toBe(true);
          expect(new Set(names.map((n) => n.toLowerCase())).size).toBe(names.length);
          const valid = claim.filter(
            (c): c is string => typeof c === 'string' && GroupName.safeParse(c.trim()).success,
          );
          expect(names.map((n) => n.toLowerCase())).toEqual([...new Set(valid.map((c) => c.trim().toLowerCase()))]);
        },
      ),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it('drops NUL bytes, lone surrogates, empty and over-long names; caps the count', () => {
    expect(claimedGroupNames(['a\0b', '\uD800x', '', '   ', 'x'.repeat(129), 'Ops', 'ops', ' Dev '])).toEqual([
      'Ops',
      'Dev',
    ]);
    expect(claimedGroupNames(Array.from({ length: 500 }, (_, i) => `g${i}`))).toHaveLength(IDP_GROUPS_MAX);
  });
});

const ADMIN = { userId: 'a0000000-0000-4000-8000-0000000000ad', role: 'admin' as const };
const GID = 'b0000000-0000-4000-8000-000000000001';
const group = (members: { user_id: string; source: 'admin' | 'idp' }[]) => ({
  id: GID,
  name: 'Ops',
  description: '',
  allowed_agents: null,
  allowed_llm_clients: null,
  security_groups: [],
  source: 'admin' as const,
  created_at: new Date(0).toISOString(),
  members,
});

function setUp() {
  const calls: Array<[string, unknown]> = [];
  const bus = {
    call: (subject: string, req: { change?: { add: string[] } }) => {
      calls.push([subject, req]);
      if (subject === 'groups.sync_idp') return Promise.resolve({});
      if (subject === 'groups.list')
        return Promise.resolve({ items: [group([U2, U1].map((u) => ({ user_id: u, source: 'idp' as const })))] });
      return Promise.resolve(group((req.change?.add ?? []).map((u) => ({ user_id: u, source: 'admin' as const }))));
    },
  } as unknown as Bus;
  const emails = new Map([
    [U2, 'Two@example.com'],
    [U1, 'one@example.com'],
  ]);
  const users = {
    findByIds: (ids: string[]) =>
      Promise.resolve(ids.flatMap((id) => (emails.has(id) ? [{ id, email: emails.get(id)! }] : []))),
  } as unknown as UsersRepository;
  return { calls, svc: new GroupsService(bus, users), emails };
}

describe('GroupsService (gateway)', () => {
  it('answers 404 for any user id that names no user, before calling the session worker', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.boolean(), async (uid, asRemove) => {
        fc.pre(uid !== U1 && uid !== U2);
        const { calls, svc } = setUp();
        const change = asRemove ? { add: [U1], remove: [uid] } : { add: [U1, uid], remove: [] };
        expect(await status(svc.changeMembers(ADMIN, GID, change))).toBe(404);
        expect(calls).toEqual([]);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('gives members their emails, in email order; a membership of a user no longer there is not shown', async () => {
    const { svc, emails } = setUp();
    const g = await svc.changeMembers(ADMIN, GID, { add: [U2, U1], remove: [] });
    expect(g.members).toEqual([
      { user_id: U1, email: 'one@example.com', source: 'admin' },
      { user_id: U2, email: 'Two@example.com', source: 'admin' },
    ]);
    emails.delete(U2);
    expect((await svc.list(ADMIN))[0].members).toEqual([{ user_id: U1, email: 'one@example.com', source: 'idp' }]);
  });

  it('syncs only the signed-in user, with the claim cleaned', async () => {
    const { calls, svc } = setUp();
    const actor = { userId: U1, role: 'user' as const };
    await svc.syncIdpGroups(actor, [' Ops ', 'ops', 'a\0b', 7]);
    expect(calls).toEqual([['groups.sync_idp', { actor, names: ['Ops'] }]]);
  });
});
