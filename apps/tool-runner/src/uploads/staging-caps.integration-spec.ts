import { randomUUID } from 'node:crypto';
import { readdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { FILE_CHUNK_BYTES } from '@skald/contracts';
import { recordAttackSuite } from '@skald/testing';
import { RemoteError } from '@skald/messaging/bus-errors';
import { workspaceFixture, WorkspaceFixture } from '../testing-fixtures/workspace-fixture';
import { ToolError } from '../tool-error';
import { UploadOptions, WorkspaceFilesService } from './workspace-files.service';

/**
 * Staged upload chunks are the user's bytes: they count against the workspace quota and two
 * per-user caps (uploads in progress, bytes staged), whatever the concurrency, and an abandoned
 * upload is swept within its time to live. Real files in a temp directory.
 */
describe('staged uploads: quota, per-user caps and the sweep', () => {
  const MiB = 1024 * 1024;
  let fx: WorkspaceFixture;
  let svc: WorkspaceFilesService;
  const start = async (quota: number, opts: Partial<UploadOptions>) => {
    fx = await workspaceFixture({ quota });
    svc = new WorkspaceFilesService(fx.workspaces, { root: join(fx.base, 'ws'), quota }, { sweepMs: 0, ...opts });
    // Optional calls: the spec also runs against the build before the sweep timer existed.
    (svc as Partial<WorkspaceFilesService>).onModuleInit?.();
  };
  afterEach(async () => {
    (svc as Partial<WorkspaceFilesService>).onModuleDestroy?.();
    await fx.cleanup();
  });

  const actor = () => ({ userId: fx.userId, role: 'user' as const });
  const chunk = (uploadId: string, offset: number, bytes: number, last = false) =>
    svc.upload({
      actor: actor(),
      upload_id: uploadId,
      name: 'big.bin',
      mimetype: 'application/octet-stream',
      offset,
      data: Buffer.alloc(bytes, 1).toString('base64'),
      last,
    });
  /** Bytes the user has staged (this layout, `.staging/<user>/<upload>`, and the old flat `.staging/<user>.<upload>`). */
  const stagedBytes = async () => {
    const root = join(fx.base, 'ws', '.staging');
    let n = 0;
    for (const f of await readdir(root).catch(() => [] as string[])) {
      const s = await stat(join(root, f)).catch(() => null);
      if (s?.isFile() && f.startsWith(`${fx.userId}.`)) n += s.size;
      if (s?.isDirectory() && f === fx.userId)
        for (const g of await readdir(join(root, f)).catch(() => [] as string[]))
          n += (await stat(join(root, f, g)).catch(() => ({ size: 0 }))).size;
    }
    return n;
  };
  const settle = async (ps: Promise<unknown>[]) => {
    const rs = await Promise.allSettled(ps);
    const ok = rs.filter((r) => r.status === 'fulfilled').length;
    const errors = rs.flatMap((r) => (r.status === 'rejected' ? [r.reason as unknown] : []));
    return { ok, errors };
  };

  it('a user at a 1 MiB quota cannot stage more than the quota, with 16 uploads racing (and more chunks after)', async () => {
    await start(MiB, { maxUploads: 100, maxStagedBytes: 1024 * MiB });
    const ids = Array.from({ length: 16 }, () => randomUUID());
    // 16 concurrent first chunks of 512 KiB: 8 MiB offered to a 1 MiB workspace.
    const first = await settle(ids.map((id) => chunk(id, 0, FILE_CHUNK_BYTES)));
    // Then every upload tries to go on: its second chunk.
    const second = await settle(ids.map((id) => chunk(id, FILE_CHUNK_BYTES, FILE_CHUNK_BYTES)));
    const staged = await stagedBytes();
    recordAttackSuite('uploads', 'staged bytes at a 1 MiB quota', {
      offered: 32 * FILE_CHUNK_BYTES,
      staged,
      accepted: first.ok + second.ok,
    });
    expect(staged).toBeLessThanOrEqual(MiB);
    expect(first.ok + second.ok).toBe(MiB / FILE_CHUNK_BYTES);
    for (const e of [...first.errors, ...second.errors].filter((e) => e instanceof ToolError))
      expect(e.code).toMatch(/quota_exceeded|invalid_argument/);
    expect(first.errors.every((e) => e instanceof ToolError && e.code === 'quota_exceeded')).toBe(true);
  });

  it('the workspace usage plus staged bytes stay within the quota (a stored file counts, its staging no longer)', async () => {
    await start(MiB, { maxUploads: 100, maxStagedBytes: 1024 * MiB });
    const a = randomUUID();
    await chunk(a, 0, FILE_CHUNK_BYTES);
    const stored = await chunk(a, FILE_CHUNK_BYTES, 0, true);
    expect(stored.attachment?.filesize).toBe(FILE_CHUNK_BYTES);
    expect(await stagedBytes()).toBe(0);
    const rest = await settle(Array.from({ length: 6 }, () => chunk(randomUUID(), 0, FILE_CHUNK_BYTES)));
    expect(rest.ok).toBe(1);
    expect(await stagedBytes()).toBe(FILE_CHUNK_BYTES);
  });

  it('concurrent uploads beyond SKALD_MAX_UPLOADS_PER_USER: exactly the cap start, the rest get rate_limited naming it', async () => {
    await start(1024 * MiB, { maxUploads: 3, maxStagedBytes: 1024 * MiB });
    const r = await settle(Array.from({ length: 12 }, () => chunk(randomUUID(), 0, 1000)));
    expect(r.ok).toBe(3);
    expect(r.errors).toHaveLength(9);
    for (const e of r.errors) {
      expect(e).toBeInstanceOf(RemoteError);
      expect((e as RemoteError).body.code).toBe('rate_limited');
      expect((e as RemoteError).body.message).toMatch(
        /per-user limit uploads reached: at most 3 .*SKALD_MAX_UPLOADS_PER_USER/,
      );
    }
    recordAttackSuite('uploads', 'concurrent uploads cap', { attempts: 12, accepted: r.ok, cap: 3 });
  });

  it('bytes staged beyond SKALD_MAX_STAGED_BYTES_PER_USER: exactly what fits is staged, the rest get rate_limited', async () => {
    await start(1024 * MiB, { maxUploads: 100, maxStagedBytes: 2 * FILE_CHUNK_BYTES });
    const r = await settle(Array.from({ length: 10 }, () => chunk(randomUUID(), 0, FILE_CHUNK_BYTES)));
    expect(r.ok).toBe(2);
    for (const e of r.errors) {
      expect((e as RemoteError).body.code).toBe('rate_limited');
      expect((e as RemoteError).body.message).toMatch(
        new RegExp(
          `per-user limit staged_bytes reached: at most ${2 * FILE_CHUNK_BYTES} .*SKALD_MAX_STAGED_BYTES_PER_USER`,
        ),
      );
    }
    expect(await stagedBytes()).toBe(2 * FILE_CHUNK_BYTES);
  });

  it('an abandoned upload is removed by the sweep within its time to live plus one period, and frees the caps', async () => {
    const ttl = 400;
    const every = 100;
    await start(MiB, { maxUploads: 1, maxStagedBytes: 1024 * MiB, stagingTtlMs: ttl, sweepMs: every });
    const abandoned = randomUUID();
    await chunk(abandoned, 0, FILE_CHUNK_BYTES);
    const t0 = Date.now();
    await expect(chunk(randomUUID(), 0, 10)).rejects.toBeInstanceOf(RemoteError);
    let gone = -1;
    while (Date.now() - t0 < 10_000) {
      if ((await stagedBytes()) === 0) {
        gone = Date.now() - t0;
        break;
      }
      await new Promise((r) => setTimeout(r, 20));
    }
    recordAttackSuite('uploads', 'abandoned upload swept', { ttlMs: ttl, sweepMs: every, goneAfterMs: gone });
    expect(gone).toBeGreaterThanOrEqual(ttl - 50);
    // Bound: the TTL, one period, and a margin for a loaded machine.
    expect(gone).toBeLessThan(ttl + every + 1500);
    // The cap is free again; the abandoned upload cannot be resumed (its bytes are gone).
    await expect(chunk(randomUUID(), 0, 10)).resolves.toEqual({ received: 10 });
  });
});
