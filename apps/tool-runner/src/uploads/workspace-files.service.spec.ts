import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { mkdir, readdir, readFile, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FILE_CHUNK_BYTES } from '@skald/contracts';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { WorkspaceFilesService } from './workspace-files.service';

// A failing property prints its seed; FC_SEED=<seed> replays it.
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

describe('WorkspaceFilesService', () => {
  let fx: WorkspaceFixture;
  let svc: WorkspaceFilesService;
  const quota = 4 * FILE_CHUNK_BYTES;
  beforeEach(async () => {
    fx = await workspaceFixture({ quota });
    svc = new WorkspaceFilesService(fx.workspaces, { root: join(fx.base, 'ws'), quota });
  });
  afterEach(() => fx.cleanup());

  const actor = () => ({ userId: fx.userId, role: 'user' as const });
  const error = async (p: Promise<unknown>): Promise<ToolError> => {
    const e = await p.then(
      () => null,
      (err: unknown) => err,
    );
    if (!(e instanceof ToolError)) throw new Error(`expected a ToolError, got ${String(e)}`);
    return e;
  };
  /** Uploads `bytes` in chunks as the gateway does. */
  const upload = async (name: string, bytes: Buffer, uploadId = randomUUID()) => {
    let offset = 0;
    for (;;) {
      const part = bytes.subarray(offset, offset + FILE_CHUNK_BYTES);
      const last = offset + part.length >= bytes.length;
      const r = await svc.upload({
        actor: actor(),
        upload_id: uploadId,
        name,
        mimetype: 'text/plain',
        offset,
        data: part.toString('base64'),
        last,
      });
      offset += part.length;
      if (last) return r.attachment!;
    }
  };
  /** Staged uploads left (`.staging/<user>/<upload>`). */
  const stagingLeft = async () =>
    (await readdir(join(fx.base, 'ws', '.staging', fx.userId)).catch(() => [] as string[])).length;

  it('stores a chunked upload under uploads/ with its sanitised name, and a taken name gets (1)', async () => {
    const bytes = Buffer.alloc(FILE_CHUNK_BYTES + 10, 7);
    const a = await upload('../../etc/report.txt', bytes);
    expect(a).toEqual({
      path: '/workspace/uploads/report.txt',
      name: 'report.txt',
      mimetype: 'text/plain',
      filesize: bytes.length,
    });
    expect((await readFile(join(fx.home, 'uploads/report.txt'))).equals(bytes)).toBe(true);
    const b = await upload('report.txt', Buffer.from('second'));
    expect(b.path).toBe('/workspace/uploads/report (1).txt');
    expect((await readFile(join(fx.home, 'uploads/report.txt'))).equals(bytes)).toBe(true);
    expect(await stagingLeft()).toBe(0);
  });

  it('refuses an upload past the workspace quota, and the workspace is unchanged', async () => {
    await writeFile(join(fx.home, 'big.bin'), Buffer.alloc(3 * FILE_CHUNK_BYTES));
    fx.workspaces.remeasureSoon(fx.userId);
    const e = await error(upload('x.bin', Buffer.alloc(2 * FILE_CHUNK_BYTES)));
    expect(e.code).toBe('quota_exceeded');
    expect(await readdir(fx.home)).toEqual(['big.bin']);
  });

  it('never writes through an uploads/ symlink that leaves the workspace', async () => {
    const outside = join(fx.base, 'outside');
    await mkdir(outside);
    await symlink(outside, join(fx.home, 'uploads'));
    const e = await error(upload('a.txt', Buffer.from('x')));
    expect(e.code).toBe('outside_workspace');
    expect(await readdir(outside)).toEqual([]);
  });

  it('refuses chunks out of order; a repeated chunk is not written twice', async () => {
    const id = randomUUID();
    const chunk = (offset: number, data: string, last = false) =>
      svc.upload({
        actor: actor(),
        upload_id: id,
        name: 'o.txt',
        offset,
        data: Buffer.from(data).toString('base64'),
        last,
      });
    await chunk(0, 'abc');
    expect((await chunk(0, 'abc')).received).toBe(3);
    expect((await error(chunk(10, 'x'))).code).toBe('invalid_argument');
    expect((await error(chunk(1, 'xyz'))).code).toBe('invalid_argument');
    const done = await chunk(3, 'def', true);
    expect(await readFile(join(fx.home, 'uploads/o.txt'), 'utf8')).toBe('abcdef');
    expect(done.attachment?.filesize).toBe(6);
  });

  describe('read (GET /files)', () => {
    beforeEach(async () => {
      await mkdir(join(fx.home, 'docs'));
      await writeFile(join(fx.home, 'docs/a.md'), '# hello');
    });
    const read = (path: string, offset = 0) => svc.read({ actor: actor(), path, offset, length: FILE_CHUNK_BYTES });

    it('reads a workspace file by its /workspace path or relative to it', async () => {
      for (const p of ['/workspace/docs/a.md', 'docs/a.md', './docs/../docs/a.md']) {
        const r = await read(p);
        expect(r).toEqual({ path: '/workspace/docs/a.md', size: 7, data: Buffer.from('# hello').toString('base64') });
      }
      expect(Buffer.from((await read('docs/a.md', 2)).data, 'base64').toString()).toBe('hello');
    });

    it('never reads outside the workspace: traversal, host paths, symlinks out, another user, memory', async () => {
      const other = await fx.workspaces.jail(randomUUID());
      await writeFile(join(other.root, 'secret.txt'), 'theirs');
      await writeFile(join(fx.base, 'host-secret'), 'host');
      await symlink(join(fx.base, 'host-secret'), join(fx.home, 'link'));
      await symlink(fx.base, join(fx.home, 'dirlink'));
      const otherId = other.root.split('/').pop()!;
      const hostile = [
        '/etc/passwd',
        '../host-secret',
        '/workspace/../host-secret',
        `/workspace/../${otherId}/secret.txt`,
        `../${otherId}/secret.txt`,
        join(other.root, 'secret.txt'),
        'link',
        'dirlink/host-secret',
        `dirlink/ws/${otherId}/secret.txt`,
        'user-memory/notes.md',
        'docs/a.md\0.png',
        'docs',
        '/workspace',
        '',
      ];
      for (const p of hostile) {
        const e = await error(read(p));
        expect([p, e.code]).toEqual([
          p,
          expect.stringMatching(/^(outside_workspace|not_found|invalid_argument|not_a_file)$/),
        ]);
      }
    });

    it('answers every generated path with a file inside the workspace or a ToolError, never anything else', async () => {
      const segment = fc.constantFrom(
        '..',
        '.',
        '',
        'docs',
        'a.md',
        'link',
        '%2e%2e',
        '\0',
        'workspace',
        '/',
        '~',
        'user-memory',
      );
      const outside = join(fx.base, 'outside.txt');
      await writeFile(outside, 'OUTSIDE');
      await symlink(outside, join(fx.home, 'link'));
      await fc.assert(
        fc.asyncProperty(fc.array(segment, { maxLength: 8 }), fc.boolean(), async (segs, abs) => {
          const p = `${abs ? '/' : ''}${segs.join('/')}`;
          const r = await svc.read({ actor: actor(), path: p, offset: 0, length: 64 }).catch((e: unknown) => e);
          if (r instanceof ToolError) return;
          if (r instanceof Error) throw r;
          const ok = r as { path: string; data: string };
          expect(ok.path.startsWith('/workspace/')).toBe(true);
          expect(Buffer.from(ok.data, 'base64').toString()).not.toContain('OUTSIDE');
        }),
        { seed, numRuns: 2000 },
      );
    });
  });
});
