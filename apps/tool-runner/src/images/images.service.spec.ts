import sharp from 'sharp';
import type { FileHandle } from 'node:fs/promises';
import { fake, newTestService } from '@skald/testing/unit';
import { ToolError } from '../tool-error';
import { WorkspacesService } from '../workspace/workspaces.service';
import { IMAGE_CACHE_ENTRIES, ImagesService, MAX_CONCURRENT_FITS, MAX_IMAGE_FILE_BYTES } from './images.service';

/**
 * ImagesService with the workspace faked (files are buffers in a map; nothing touches the disk):
 * an image is fitted to the request's limits and kept, so a history projected again reads the
 * file's bytes once; a file written since is fitted anew; a file too large is refused unread; what
 * the jail or the decoder refuses is a reason the model reads, never a crash; decodes are bounded.
 */
const actor = { userId: 'u1', role: 'user' as const };

function setUp() {
  const files = new Map<string, { bytes: Buffer; mtimeMs: number; size?: number }>();
  const reads: string[] = [];
  const jail = {
    openRead: async (p: { virtual: string }) => {
      const f = files.get(p.virtual);
      if (!f) throw new ToolError('not_found', `${p.virtual} does not exist`);
      const handle = {
        stat: async () => ({ mtimeMs: f.mtimeMs }),
        read: async (buf: Buffer, off: number, len: number, pos: number) => {
          reads.push(p.virtual);
          const n = f.bytes.copy(buf, off, pos, pos + len);
          return { bytesRead: n, buffer: buf };
        },
        close: async () => undefined,
      } as unknown as FileHandle;
      return { handle, size: f.size ?? f.bytes.length };
    },
  };
  const t = newTestService(ImagesService, [fake(WorkspacesService, { jail: async () => jail } as never)]);
  return { ...t, files, reads };
}

const png = (width: number, height: number) =>
  sharp({ create: { width, height, channels: 3, background: { r: 200, g: 20, b: 20 } } })
    .png()
    .toBuffer();
const ask = (path: string, max_side = 64) => ({ actor, path, max_side, max_bytes: 200_000 });

describe('ImagesService', () => {
  it('fits an image to the limits, and reads the file once for the same size and time', async () => {
    const { sut, files, reads } = setUp();
    files.set('/workspace/a.png', { bytes: await png(400, 200), mtimeMs: 1 });
    const first = await sut.image(ask('/workspace/a.png'));
    expect(first).toMatchObject({ ok: true, path: '/workspace/a.png', mime: 'image/jpeg', width: 64, height: 32 });
    const decoded = await sharp(Buffer.from((first as { data: string }).data, 'base64')).metadata();
    expect([decoded.format, decoded.width, decoded.height]).toEqual(['jpeg', 64, 32]);
    const readsOnce = reads.length;
    expect(await sut.image(ask('/workspace/a.png'))).toEqual(first);
    expect(reads.length).toBe(readsOnce);
    // written since: fitted anew
    files.set('/workspace/a.png', { bytes: await png(100, 300), mtimeMs: 2 });
    expect(await sut.image(ask('/workspace/a.png'))).toMatchObject({ ok: true, width: 21, height: 64 });
  });

  it('refuses a file too large unread, and says what the jail or the decoder refused', async () => {
    const { sut, files, reads } = setUp();
    files.set('/workspace/huge.png', { bytes: Buffer.alloc(8), mtimeMs: 1, size: MAX_IMAGE_FILE_BYTES + 1 });
    const huge = await sut.image(ask('/workspace/huge.png'));
    expect(huge.ok).toBe(false);
    expect(!huge.ok && huge.reason).toMatch(/more than the 32 MiB an image file may be/);
    expect(reads).toEqual([]);
    expect(await sut.image(ask('/workspace/gone.png'))).toEqual({
      ok: false,
      reason: '/workspace/gone.png does not exist',
    });
    files.set('/workspace/text.png', { bytes: Buffer.from('not an image at all'), mtimeMs: 1 });
    const text = await sut.image(ask('/workspace/text.png'));
    expect(!text.ok && text.reason.length > 0).toBe(true);
  });

  it('keeps at most IMAGE_CACHE_ENTRIES fitted images: the oldest is read again', async () => {
    const { sut, files, reads } = setUp();
    const small = await png(8, 8);
    for (let i = 0; i <= IMAGE_CACHE_ENTRIES; i++) {
      files.set(`/workspace/${i}.png`, { bytes: small, mtimeMs: 1 });
      await sut.image(ask(`/workspace/${i}.png`, 8));
    }
    reads.length = 0;
    await sut.image(ask(`/workspace/${IMAGE_CACHE_ENTRIES}.png`, 8));
    expect(reads).toEqual([]);
    await sut.image(ask('/workspace/0.png', 8));
    expect(reads).toContain('/workspace/0.png');
  });

  it(`more decodes than the ${MAX_CONCURRENT_FITS} at once wait their turn: every one is answered`, async () => {
    const { sut, files } = setUp();
    for (let i = 0; i < 6; i++) files.set(`/workspace/c${i}.png`, { bytes: await png(300 + i, 300), mtimeMs: 1 });
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => sut.image(ask(`/workspace/c${i}.png`))));
    expect(results.every((r) => r.ok)).toBe(true);
  });
});
