/**
 * The session worker's GroupsService with an in-memory store: only an admin edits (anyone else is
 * refused, nothing changes); the login's sync of the identity provider's group claim (exactly the
 * claimed groups, the actor's own memberships only, admin memberships untouched); the admin edits
 * refusing unknown ids (not_found) and taken names (conflict) without changing anything.
 */
import { NO_BUDGET_LIMITS } from '@skald/contracts';
import fc from 'fast-check';
import { RemoteError } from '@skald/messaging/bus-errors';
import { InMemoryGroupStore } from './in-memory-group-store';
import { GroupsService } from './groups.service';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const U1 = 'a0000000-0000-4000-8000-000000000001';
const U2 = 'a0000000-0000-4000-8000-000000000002';
const ADMIN = { userId: 'a0000000-0000-4000-8000-0000000000ad', role: 'admin' as const };
const user = (userId: string) => ({ userId, role: 'user' as const });

function setUp() {
  const store = new InMemoryGroupStore();
  const svc = new GroupsService(store, store);
  const admin = {
    list: async () => (await svc.list(ADMIN)).items,
    create: (req: Parameters<GroupsService['create']>[1]) => svc.create(ADMIN, req),
    update: (id: string, req: Parameters<GroupsService['update']>[2]) => svc.update(ADMIN, id, req),
    delete: (id: string) => svc.delete(ADMIN, id),
    changeMembers: (id: string, req: Parameters<GroupsService['changeMembers']>[2]) =>
      svc.changeMembers(ADMIN, id, req),
    syncIdpGroups: (userId: string, names: string[]) => svc.syncIdp(user(userId), names),
  };
  return { store, svc: admin, raw: svc };
}

const fields = {
  description: '',
  allowed_agents: null,
  allowed_llm_clients: null,
  security_groups: [],
  budget: NO_BUDGET_LIMITS,
};
const memberships = (store: InMemoryGroupStore, userId: string, source: 'admin' | 'idp') =>
  store.members
    .filter((m) => m.userId === userId && m.source === source)
    .map((m) => store.groups.find((g) => g.id === m.groupId)!.name.toLowerCase())
    .sort();

async function status(p: Promise<unknown>): Promise<string> {
  try {
    await p;
    return 'ok';
  } catch (e) {
    if (e instanceof RemoteError) return e.body.code;
    throw e;
  }
}

describe('who may edit', () => {
  it('refuses every admin subject to anyone but an admin, and changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), async (uid) => {
        const { store, svc, raw } = setUp();
        const g = await svc.create({ ...fields, name: 'Ops' });
        const u = user(uid);
        expect(await status(raw.list(u))).toBe('forbidden');
        expect(await status(raw.create(u, { ...fields, name: 'Dev' }))).toBe('forbidden');
        expect(await status(raw.update(u, g.id, { name: 'x' }))).toBe('forbidden');
        expect(await status(raw.delete(u, g.id))).toBe('forbidden');
        expect(await status(raw.changeMembers(u, g.id, { add: [uid], remove: [] }))).toBe('forbidden');
        expect(store.groups.map((x) => x.name)).toEqual(['Ops']);
        expect(store.members).toEqual([]);
      }),
      { seed: SEED, numRuns: 200 },
    );
  });
});

describe('syncIdpGroups', () => {
  it('makes the idp memberships exactly the claim and never touches admin memberships', async () => {
    const names = fc.constantFrom('Ops', 'ops', 'Dev', 'QA', 'Finance', 'dev ');
    const step = fc.oneof(
      fc.record({ kind: fc.constant('sync' as const), user: fc.constantFrom(U1, U2), claim: fc.array(names) }),
      fc.record({ kind: fc.constant('admin' as const), user: fc.constantFrom(U1, U2), name: names }),
    );
    await fc.assert(
      fc.asyncProperty(fc.array(step, { maxLength: 12 }), async (steps) => {
        const { store, svc } = setUp();
        for (const s of steps) {
          if (s.kind === 'admin') {
            const created = await svc.create({ ...fields, name: s.name.trim() }).catch(() => null);
            const g = created ?? (await svc.list()).find((x) => x.name.toLowerCase() === s.name.trim().toLowerCase())!;
            await svc.changeMembers(g.id, { add: [s.user], remove: [] });
            continue;
          }
          const adminBefore = { [U1]: memberships(store, U1, 'admin'), [U2]: memberships(store, U2, 'admin') };
          const other = s.user === U1 ? U2 : U1;
          const otherIdp = memberships(store, other, 'idp');
          await svc.syncIdpGroups(s.user, [
            ...new Map(s.claim.map((c) => [c.trim().toLowerCase(), c.trim()])).values(),
          ]);
          expect(memberships(store, s.user, 'idp')).toEqual(
            [...new Set(s.claim.map((c) => c.trim().toLowerCase()))].sort(),
          );
          expect({ [U1]: memberships(store, U1, 'admin'), [U2]: memberships(store, U2, 'admin') }).toEqual(adminBefore);
          expect(memberships(store, other, 'idp')).toEqual(otherIdp);
        }
        const lower = store.groups.map((g) => g.name.toLowerCase());
        expect(new Set(lower).size).toBe(lower.length);
      }),
      { seed: SEED, numRuns: 500 },
    );
  });

  it('creates missing groups with source idp and joins an existing admin group of that name', async () => {
    const { store, svc } = setUp();
    const admin = await svc.create({ ...fields, name: 'Ops' });
    await svc.syncIdpGroups(U1, ['OPS', 'Research']);
    expect(store.groups.map((g) => [g.name, g.source])).toEqual([
      ['Ops', 'admin'],
      ['Research', 'idp'],
    ]);
    expect(store.members.find((m) => m.groupId === admin.id)).toEqual({ groupId: admin.id, userId: U1, source: 'idp' });
    await svc.syncIdpGroups(U1, []);
    expect(store.members).toEqual([]);
    expect(store.groups).toHaveLength(2);
  });
});

describe('admin edits', () => {
  it('answers not_found for any id that names no group, and changes nothing', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.uuid(), async (gid, uid) => {
        const { store, svc } = setUp();
        const g = await svc.create({ ...fields, name: 'Ops' });
        fc.pre(gid !== g.id);
        expect(await status(svc.update(gid, { name: 'x' }))).toBe('not_found');
        expect(await status(svc.delete(gid))).toBe('not_found');
        expect(await status(svc.changeMembers(gid, { add: [U1, uid], remove: [] }))).toBe('not_found');
        expect(store.members).toEqual([]);
        expect(store.groups.map((x) => x.name)).toEqual(['Ops']);
      }),
      { seed: SEED, numRuns: 300 },
    );
  });

  it('refuses a name taken without regard to case (conflict), on create and on rename', async () => {
    const { svc } = setUp();
    await svc.create({ ...fields, name: 'Ops' });
    const dev = await svc.create({ ...fields, name: 'Dev' });
    expect(await status(svc.create({ ...fields, name: 'oPS' }))).toBe('conflict');
    expect(await status(svc.update(dev.id, { name: 'OPS' }))).toBe('conflict');
    expect((await svc.update(dev.id, { name: 'DEV' })).name).toBe('DEV');
  });

  it('removes only admin memberships: an idp membership stays for the login to replace', async () => {
    const { svc } = setUp();
    const g = await svc.create({ ...fields, name: 'Ops' });
    await svc.syncIdpGroups(U1, ['Ops']);
    await svc.changeMembers(g.id, { add: [U1, U2], remove: [] });
    const after = await svc.changeMembers(g.id, { add: [], remove: [U1, U2] });
    expect(after.members).toEqual([{ user_id: U1, source: 'idp' }]);
  });
});

describe('GroupsService.policy', () => {
  it("answers a user's own policy; another user's or a group's only to an admin", async () => {
    const { svc, raw } = setUp();
    const g = await svc.create({ ...fields, name: 'Interns', allowed_llm_clients: ['small'], security_groups: ['sg'] });
    await svc.changeMembers(g.id, { add: [U1], remove: [] });
    const interns = {
      groups: ['Interns'],
      allowed_agents: null,
      allowed_llm_clients: ['small'],
      security_groups: ['sg'],
    };
    expect(await raw.policy(user(U1), { user_id: U1 })).toEqual(interns);
    expect(await raw.policy(ADMIN, { user_id: U1 })).toEqual(interns);
    expect(await raw.policy(ADMIN, { group_id: g.id })).toEqual(interns);
    expect(await raw.policy(user(U2), { user_id: U2 })).toEqual({
      groups: [],
      allowed_agents: null,
      allowed_llm_clients: null,
      security_groups: [],
    });
    await expect(raw.policy(user(U2), { user_id: U1 })).rejects.toMatchObject({ body: { code: 'forbidden' } });
    await expect(raw.policy(user(U1), { group_id: g.id })).rejects.toMatchObject({ body: { code: 'forbidden' } });
    await expect(raw.policy(ADMIN, { group_id: U2 })).rejects.toMatchObject({ body: { code: 'not_found' } });
  });
});
