import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { NO_GROUPS } from '../../groups/group-policy';
import { PgSessionStore } from './pg-session-store';

/**
 * The owner's groups come with every turn's start read (one statement): a membership changed
 * between two turns is what the next turn's store answers; another user's groups never are.
 */
describe('PgSessionStore.startTurn: the owner groups', () => {
  let ds: DataSource;
  const tag = randomUUID().slice(0, 8);

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.query(`DELETE FROM groups WHERE name LIKE $1`, [`%-${tag}`]);
    await ds?.destroy();
  });

  const user = async () => {
    const id = randomUUID();
    await ds.query(`INSERT INTO users (id, email, password_hash, role) VALUES ($1, $2, 'x', 'user')`, [
      id,
      `start-groups-${id}@example.com`,
    ]);
    return id;
  };
  const group = async (name: string, agents: string[] | null, clients: string[] | null, sec: string[]) => {
    const id = randomUUID();
    await ds.query(
      `INSERT INTO groups (id, name, allowed_agents, allowed_llm_clients, security_groups, source)
       VALUES ($1, $2, $3, $4, $5, 'admin')`,
      [id, `${name}-${tag}`, agents, clients, sec],
    );
    return id;
  };
  const join = (groupId: string, userId: string, source = 'admin') =>
    ds.query(`INSERT INTO group_members (group_id, user_id, source) VALUES ($1, $2, $3)`, [groupId, userId, source]);
  const start = async (sessionId: string) =>
    (await new PgSessionStore(ds, { owner: 'spec', epoch: 0 }, () => undefined).startTurn(sessionId)).groups;

  it('reads the union of the owner groups, and the change on the next start', async () => {
    const alice = await user();
    const bob = await user();
    const sessionId = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [sessionId, alice]);
    const ops = await group('Ops', ['main'], ['small'], ['ops']);
    const lab = await group('Lab', ['coder'], null, ['lab', 'ops']);
    await join(lab, bob);
    expect(await start(sessionId)).toEqual(NO_GROUPS);

    await join(ops, alice);
    const one = await start(sessionId);
    expect(one.groups).toEqual([`Ops-${tag}`]);
    expect([...one.agents!]).toEqual(['main']);
    expect([...one.clients!]).toEqual(['small']);
    expect(one.securityGroups).toEqual(['ops']);

    await join(lab, alice, 'idp');
    const two = await start(sessionId);
    expect(two.groups).toEqual([`Lab-${tag}`, `Ops-${tag}`]);
    expect([...two.agents!].sort()).toEqual(['coder', 'main']);
    expect(two.clients).toBeNull();
    expect(two.securityGroups).toEqual(['lab', 'ops']);

    await ds.query(`DELETE FROM group_members WHERE user_id = $1`, [alice]);
    expect(await start(sessionId)).toEqual(NO_GROUPS);
  });
});
