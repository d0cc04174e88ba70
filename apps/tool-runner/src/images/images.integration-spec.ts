import { mkdir, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import sharp from 'sharp';
import { IMAGE_RESULT_TYPE, imageResultPath } from '@skald/contracts';
import { tp, workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ImagesService } from './images.service';

/** `tools.image` and `read_file` of an image over a real workspace (temp dir): the jail, the cache, the description. */
describe('workspace images for vision clients', () => {
  let fx: WorkspaceFixture;
  let svc: ImagesService;
  beforeEach(async () => {
    fx = await workspaceFixture();
    svc = new ImagesService(fx.workspaces);
  });
  afterEach(() => fx.cleanup());

  const ask = (path: string, maxSide = 100) =>
    svc.image({ actor: { userId: fx.userId, role: 'user' }, path, max_side: maxSide, max_bytes: 50_000 });
  const png = (w: number, h: number, color: string) =>
    sharp({ create: { width: w, height: h, channels: 3, background: color } })
      .png()
      .toBuffer();

  it('fits a workspace image; a rewritten file is fitted anew, never served stale from the cache', async () => {
    await mkdir(join(fx.home, 'pics'));
    const file = join(fx.home, 'pics/p.png');
    await writeFile(file, await png(400, 200, '#ff0000'));
    const first = await ask('pics/p.png');
    expect(first).toMatchObject({
      ok: true,
      path: '/workspace/pics/p.png',
      mime: 'image/jpeg',
      width: 100,
      height: 50,
    });
    expect(await ask('/workspace/pics/p.png')).toEqual(first);
    await writeFile(file, await png(100, 400, '#0000ff'));
    await utimes(file, new Date(), new Date(Date.now() + 5_000));
    const second = await ask('pics/p.png');
    expect(second).toMatchObject({ ok: true, width: 25, height: 100 });
    if (!second.ok) throw new Error('unreachable');
    const meta = await sharp(Buffer.from(second.data, 'base64')).metadata();
    expect([meta.width, meta.height]).toEqual([25, 100]);
  });

  it('refuses what the jail refuses: a missing file, a directory, a symlink out of the workspace, a memory path', async () => {
    await symlink('/etc/hostname', join(fx.home, 'out.png'));
    await mkdir(join(fx.home, 'dir.png'));
    for (const path of ['nope.png', 'dir.png', 'out.png', '../x.png', 'user-memory/a.png']) {
      const reply = await ask(path);
      expect([path, reply.ok]).toEqual([path, false]);
      if (!reply.ok) expect(reply.reason).not.toMatch(/\/tmp|skald-tr-/);
    }
  });

  it('read_file of an image says what it is (result_type image); a file named .png that is text is read as text', async () => {
    await writeFile(join(fx.home, 'shot.png'), await png(640, 480, '#00ff00'));
    await writeFile(join(fx.home, 'notes.png'), 'just text\n');
    const image = await fx.files.readFile(fx.ctx(), { path: tp('shot.png') });
    expect(image.resultType).toBe(IMAGE_RESULT_TYPE);
    expect(image.result).toMatch(/^\/workspace\/shot\.png is an image \(PNG, 640×480 px, /);
    expect(imageResultPath(image.resultType ?? null, image.result)).toBe('/workspace/shot.png');
    const text = await fx.files.readFile(fx.ctx(), { path: tp('notes.png') });
    expect(text.resultType).toBeUndefined();
    expect(text.result).toContain('just text');
  });
});
