import { NO_BUDGET_LIMITS } from '@skald/contracts';
import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { GroupsRepository } from './groups.repository';
import { GroupPolicyRepository } from './group-policy.repository';
import { GroupsService } from './groups.service';

/**
 * The groups' SQL on a migrated database: names unique without regard to case, the login's sync of
 * the identity provider's claim (exactly the claimed groups, admin memberships untouched, two
 * logins racing to create the same group both land in it), admin membership edits, cascades. User
 * ids are the gateway's: the worker stores them as given (no foreign key).
 */
describe('GroupsRepository', () => {
  let ds: DataSource;
  let repo: GroupsRepository;
  let svc: GroupsService;
  const tag = randomUUID().slice(0, 8);
  const blank = {
    description: '',
    allowedAgents: null,
    allowedLlmClients: null,
    securityGroups: [],
    budget: NO_BUDGET_LIMITS,
  };

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 4 } });
    await ds.initialize();
    repo = new GroupsRepository(ds);
    svc = new GroupsService(repo, new GroupPolicyRepository(ds));
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  const ADMIN = { userId: randomUUID(), role: 'admin' as const };
  const newUser = (): Promise<string> => Promise.resolve(randomUUID());
  const sync = (userId: string, names: string[]) => svc.syncIdp({ userId, role: 'user' }, names);
  const members = (id: string, add: string[], remove: string[]) => svc.changeMembers(ADMIN, id, { add, remove });
  const memberOf = async (userId: string): Promise<string[]> => {
    const rows = await ds.query<Array<{ name: string; source: string }>>(
      `SELECT g.name, m.source FROM group_members m JOIN groups g ON g.id = m.group_id
        WHERE m.user_id = $1 ORDER BY lower(g.name), m.source`,
      [userId],
    );
    return rows.map((r) => `${r.name}/${r.source}`);
  };

  it('creates, renames and refuses a name taken without regard to case', async () => {
    const ops = await repo.create({ ...blank, name: `Ops-${tag}`, securityGroups: ['ops'] });
    expect(ops).toMatchObject({ name: `Ops-${tag}`, source: 'admin', securityGroups: ['ops'], allowedAgents: null });
    expect(await repo.create({ ...blank, name: `OPS-${tag}` })).toBeNull();
    const dev = (await repo.create({ ...blank, name: `Dev-${tag}` }))!;
    expect(await repo.update(dev.id, { name: `ops-${tag}` })).toBe('taken');
    expect(await repo.update(randomUUID(), { name: `x-${tag}` })).toBe('missing');
    const renamed = await repo.update(dev.id, { name: `Dev2-${tag}`, allowedAgents: ['main'], allowedLlmClients: [] });
    expect(renamed).toMatchObject({ name: `Dev2-${tag}`, allowedAgents: ['main'], allowedLlmClients: [] });
    const cleared = await repo.update(dev.id, { allowedAgents: null });
    expect(cleared).toMatchObject({ allowedAgents: null, allowedLlmClients: [] });
  });

  it('syncs the claim exactly, joins an admin group of that name, leaves admin memberships alone', async () => {
    const u = await newUser();
    const other = await newUser();
    const admin = (await repo.create({ ...blank, name: `Admins-${tag}` }))!;
    const shared = (await repo.create({ ...blank, name: `Shared-${tag}` }))!;
    await members(admin.id, [u], []);
    await members(shared.id, [u, other], []);
    await sync(other, [`Research-${tag}`]);

    await sync(u, [`research-${tag}`, `SHARED-${tag}`, `New-${tag}`]);
    expect(await memberOf(u)).toEqual([
      `Admins-${tag}/admin`,
      `New-${tag}/idp`,
      `Research-${tag}/idp`,
      `Shared-${tag}/admin`,
      `Shared-${tag}/idp`,
    ]);
    const created = (await repo.list()).find((g) => g.name === `New-${tag}`)!;
    expect(created.source).toBe('idp');

    await sync(u, []);
    expect(await memberOf(u)).toEqual([`Admins-${tag}/admin`, `Shared-${tag}/admin`]);
    expect(await memberOf(other)).toEqual([`Research-${tag}/idp`, `Shared-${tag}/admin`]);
  });

  it('two logins creating the same group at once both land in the one group', async () => {
    const a = await newUser();
    const b = await newUser();
    await Promise.all([sync(a, [`Race-${tag}`]), sync(b, [`RACE-${tag}`])]);
    const rows = (await repo.list()).filter((g) => g.name.toLowerCase() === `race-${tag}`.toLowerCase());
    expect(rows).toHaveLength(1);
    expect(rows[0].members.map((m) => m.userId).sort()).toEqual([a, b].sort());
  });

  it('admin edits: an unknown group changes nothing; a deleted group takes its memberships with it', async () => {
    const u = await newUser();
    const g = (await repo.create({ ...blank, name: `Temp-${tag}` }))!;
    await expect(members(randomUUID(), [u], [])).rejects.toMatchObject({ body: { code: 'not_found' } });
    expect(await memberOf(u)).toEqual([]);
    expect(await repo.changeAdminMembers(randomUUID(), [u], [])).toBe(false);
    await members(g.id, [u], []);
    expect(await memberOf(u)).toEqual([`Temp-${tag}/admin`]);
    expect(await repo.delete(g.id)).toBe(true);
    expect(await repo.delete(g.id)).toBe(false);
    expect(await memberOf(u)).toEqual([]);
  });
});
