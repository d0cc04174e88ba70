import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { PendingWriteKind1764460805700 } from './1764460805700-pending-write-kind';

jest.setTimeout(30_000);

/**
 * `pending_write` events stored before `kind` get it from what they are (a command's by the path
 * its card carried, which then goes); events stored with `kind` keep their payload; `down` gives a
 * command its old path back. On the run's migrated test database, in a session of its own.
 */
describe('migration PendingWriteKind', () => {
  let ds: DataSource;
  const migration = new PendingWriteKind1764460805700();
  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
  });
  afterAll(async () => {
    await ds?.destroy();
  });

  async function sessionWith(payloads: object[]): Promise<string> {
    const id = randomUUID();
    await ds.query(`INSERT INTO sessions (id, user_id, source) VALUES ($1, $2, 'web')`, [id, randomUUID()]);
    for (const [i, p] of payloads.entries())
      await ds.query(
        `INSERT INTO session_events (session_id, seq, type, payload) VALUES ($1, $2, 'pending_write', $3)`,
        [id, i + 1, JSON.stringify(p)],
      );
    return id;
  }
  async function payloads(sessionId: string): Promise<unknown[]> {
    const rows: Array<{ payload: string }> = await ds.query(
      `SELECT payload FROM session_events WHERE session_id = $1 ORDER BY seq`,
      [sessionId],
    );
    return rows.map((r) => JSON.parse(r.payload) as unknown);
  }
  async function run(step: 'up' | 'down'): Promise<void> {
    const q = ds.createQueryRunner();
    try {
      await migration[step](q);
    } finally {
      await q.release();
    }
  }

  it('gives stored events their kind from what they are, and down gives a command its path back', async () => {
    const ids = { request_id: randomUUID(), tool_call_id: randomUUID() };
    const oldCommand = { type: 'pending_write', ...ids, path: '$ execute_cmd', new_content: '$ ls' };
    const oldFile = {
      type: 'pending_write',
      ...ids,
      path: '/workspace/a.txt',
      old_content: 'a',
      new_content: 'b\u0000',
    };
    const taggedCommand = { ...oldCommand, kind: 'command' };
    const newCommand = { type: 'pending_write', ...ids, kind: 'command', new_content: '$ make' };
    const newFile = { type: 'pending_write', ...ids, kind: 'file', path: '/workspace/b.txt', new_content: 'c' };
    const session = await sessionWith([oldCommand, oldFile, taggedCommand, newCommand, newFile]);

    await run('up');
    const command = { type: 'pending_write', ...ids, kind: 'command', new_content: '$ ls' };
    expect(await payloads(session)).toEqual([command, { ...oldFile, kind: 'file' }, command, newCommand, newFile]);
    await run('up');
    expect(await payloads(session)).toEqual([command, { ...oldFile, kind: 'file' }, command, newCommand, newFile]);

    await run('down');
    const withPath = (p: object) => ({ ...p, path: '$ execute_cmd' });
    expect(await payloads(session)).toEqual([
      withPath(command),
      { ...oldFile, kind: 'file' },
      withPath(command),
      withPath(newCommand),
      newFile,
    ]);
    await run('up');
  });
});
