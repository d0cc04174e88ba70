import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import type { Bus } from '@skald/messaging/bus-port';
import type { SocketCap } from '../ws/socket-cap';
import { UserStandingHandler } from './user-standing.handler';
import { UsersRepository } from './users.repository';

/** `user.page`: how the scheduler walks every user to give each one their periodic tic job. */
describe('user.page', () => {
  let ds: DataSource;
  let handler: UserStandingHandler;
  let users: UsersRepository;

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    users = new UsersRepository(ds);
    handler = new UserStandingHandler({} as Bus, users, {} as SocketCap);
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  it('walking the pages from the first to the end lists every user once, in id order, a bounded page at a time', async () => {
    const mine = new Map<string, 'user' | 'admin'>();
    for (const role of ['user', 'admin', 'user'] as const) {
      const u = await users.create({ email: `page-${randomUUID()}@example.com`, passwordHash: 'x', role });
      mine.set(u!.id, role);
    }
    const seen: string[] = [];
    const roles = new Map<string, string>();
    let after: string | null = null;
    for (let pass = 0; pass < 10_000; pass++) {
      const page = await handler.page(after, 50);
      expect(page.items.length).toBeLessThanOrEqual(50);
      for (const u of page.items) {
        seen.push(u.user_id);
        roles.set(u.user_id, u.role);
      }
      if (page.next === null) break;
      after = page.next;
    }
    expect([...seen].sort()).toEqual(seen);
    expect(new Set(seen).size).toBe(seen.length);
    for (const [id, role] of mine) expect(roles.get(id)).toBe(role);
  });
});
