/**
 * WorkspacesService over a root under os.tmpdir(): each user's workspace made on first use, private
 * (0700) and reused; a malformed user id refused; the byte quota refusing a write that would pass
 * it (with a sentence the model can act on) while shrinking is always allowed; completed writes and
 * removals counted into the cached usage; the writes of one workspace serialised; sizes in words.
 */
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fake, newTestService } from '@skald/testing/unit';
import { formatBytes, WORKSPACE_OPTIONS, WorkspacesService } from './workspaces.service';

const U1 = '00000000-0000-4000-8000-000000000001';
const U2 = '00000000-0000-4000-8000-000000000002';

let root: string;
beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'skald-workspaces-'));
});
afterEach(() => rmSync(root, { recursive: true, force: true }));

const setUp = (quota = 100) =>
  newTestService(WorkspacesService, [fake(WORKSPACE_OPTIONS, { root, quota, inodes: 10 })]).sut;

describe('WorkspacesService', () => {
  it("makes each user's workspace on first use, private to the runner, and finds it again", async () => {
    const ws = setUp();
    const jail = await ws.jail(U1);
    expect(statSync(join(root, U1)).mode & 0o777).toBe(0o700);
    expect(await ws.jail(U1)).toBe(jail);
    expect((await ws.jail(U2)).root).not.toBe(jail.root);
    expect(ws.hostDir(U1)).toBe(join(root, U1));
  });

  it('refuses a user id that could name another directory', async () => {
    const ws = setUp();
    await expect(ws.jail('../etc')).rejects.toMatchObject({ code: 'invalid_argument' });
    expect(() => ws.hostDir('a/b')).toThrow('invalid user id');
  });

  it('refuses a write that would pass the byte quota, and always allows shrinking', async () => {
    const ws = setUp(100);
    const jail = await ws.jail(U1);
    writeFileSync(join(root, U1, 'a.txt'), 'x'.repeat(60));
    await expect(ws.ensureRoom(U1, jail, 40, '/workspace/b.txt')).resolves.toBeUndefined();
    await expect(ws.ensureRoom(U1, jail, 41, '/workspace/b.txt')).rejects.toMatchObject({
      code: 'quota_exceeded',
      message:
        'workspace quota exceeded: writing /workspace/b.txt needs 41 B more, but the workspace uses 60 B of its ' +
        '100 B quota. Delete files to make room.',
    });
    await expect(ws.ensureRoom(U1, jail, -60, '/workspace/a.txt')).resolves.toBeUndefined();
  });

  it('counts completed writes and removals into the measured usage', async () => {
    const ws = setUp(100);
    const jail = await ws.jail(U1);
    expect(await ws.used(U1, jail)).toMatchObject({ bytes: 0, inodes: 0 });
    ws.commit(U1, 70, 1);
    expect(await ws.used(U1, jail)).toMatchObject({ bytes: 70, inodes: 1 });
    await expect(ws.ensureRoom(U1, jail, 31, '/workspace/c.txt')).rejects.toMatchObject({ code: 'quota_exceeded' });
    ws.freed(U1, 50, 1);
    expect(await ws.used(U1, jail)).toMatchObject({ bytes: 20, inodes: 0 });
    expect(ws.inodesFull('/workspace/d', { inodes: 10 }).message).toContain('holds 10 of its 10 files and directories');
  });

  it("runs the writes of one workspace one at a time, another user's beside them", async () => {
    const ws = setUp();
    const order: string[] = [];
    let release: () => void = () => undefined;
    const first = ws.exclusive(U1, async () => {
      order.push('u1 first starts');
      await new Promise<void>((r) => (release = r));
      order.push('u1 first ends');
    });
    const second = ws.exclusive(U1, async () => {
      order.push('u1 second');
    });
    await ws.exclusive(U2, async () => {
      order.push('u2');
    });
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['u1 first starts', 'u2', 'u1 first ends', 'u1 second']);
  });

  it('says sizes in words', () => {
    expect([formatBytes(512), formatBytes(1536), formatBytes(50 * 1024 * 1024)]).toEqual([
      '512 B',
      '1.5 KiB',
      '50 MiB',
    ]);
  });
});
