import { posix } from 'node:path';
import { aKind, DocumentExtractor, DocumentKind, documentKind } from '@skald/documents';
import type { Logger } from '@skald/service-kit';
import { ToolCancelled } from '../exec/tool-context';
import { readUpTo, writeAllAt0 } from '../files/file-io';
import { ToolError } from '../tool-error';
import { Jail } from '../workspace/jail';
import { nonToolPath, resolveWorkspacePath, WorkspacePath } from '../workspace/workspace-path';
import { WorkspacesService } from '../workspace/workspaces.service';
import { parse, Rendition, renditionOf, serialize, stampOf } from './rendition-format';

/** The hidden folder beside a document that holds its text rendition (`uploads/.skald-text/a.pdf.txt`). */
export const RENDITIONS_DIR = '.skald-text';

/**
 * Text renditions of documents (PDF, DOCX, XLSX, CSV, PPTX, HTML): `<dir>/.skald-text/<name>.txt`
 * beside the document, written through the jail and counted in the workspace's quota. Made when a
 * document is uploaded, and whenever `read_file`/`search_file` finds none for the document's
 * current content: each rendition records the identity of the content it was made from (inode,
 * size, modification and change times), so a document overwritten, replaced or renamed since is
 * extracted again, never answered from a stale text. `delete_file` of a document removes its
 * rendition. A document that cannot be extracted has a rendition that says why. Provided by a factory
 * (app.module.ts), which hands it the logger.
 */
export class DocumentRenditions {
  /** Extractions under way, by user, path and content: an upload's and a read's share one. */
  private readonly running = new Map<string, Promise<Rendition>>();

  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly extractor: DocumentExtractor,
    private readonly log?: Logger,
  ) {}

  /** The text `read_file` and `search_file` read for the document `p` (a `kind` document). */
  async text(userId: string, p: WorkspacePath, kind: DocumentKind, tool: string, signal: AbortSignal): Promise<string> {
    const r = await this.rendition(userId, p, kind, signal);
    if (r.ok) return r.text;
    throw new ToolError('binary', `${tool}: ${p.virtual} is ${aKind(kind)} whose text cannot be read: ${r.reason}`);
  }

  /** Makes the rendition of a just-uploaded document in the background (a read waits for it or makes it). */
  prepare(userId: string, virtual: string): void {
    const kind = documentKind(virtual);
    if (!kind) return;
    const p = resolveWorkspacePath(nonToolPath(virtual));
    void this.rendition(userId, p, kind, new AbortController().signal).catch((e: unknown) =>
      this.log?.warn({ userId, err: e instanceof Error ? e.message : String(e) }, 'document rendition failed'),
    );
  }

  /**
   * Removes the rendition of the document `p` (just deleted), crediting its bytes. The caller holds
   * the workspace's write lock.
   */
  async forget(userId: string, jail: Jail, p: WorkspacePath): Promise<void> {
    if (!documentKind(p.virtual)) return;
    const removed = await jail.remove(renditionPath(p), { recursive: false, maxEntries: 1 }).catch(() => null);
    if (removed) this.workspaces.freed(userId, removed.bytes, removed.inodes);
  }

  private async rendition(
    userId: string,
    p: WorkspacePath,
    kind: DocumentKind,
    signal: AbortSignal,
  ): Promise<Rendition> {
    const jail = await this.workspaces.jail(userId);
    const { handle, size } = await jail.openRead(p);
    let made: Promise<Rendition>;
    try {
      const st = await handle.stat({ bigint: true });
      const stamp = stampOf({ ino: st.ino, size: st.size, mtimeNs: st.mtimeNs, ctimeNs: st.ctimeNs });
      const stored = await this.stored(jail, p, stamp);
      if (stored) return stored;
      const key = `${userId}\n${p.virtual}\n${stamp}`;
      const bytes =
        this.running.has(key) || this.extractor.sizeRefusal(size) ? null : await readUpTo(handle, size, size);
      const shared = this.running.get(key);
      if (shared) made = shared;
      else {
        const mine = this.make(userId, p, kind, stamp, bytes);
        made = mine;
        this.running.set(key, mine);
        void mine.finally(() => {
          if (this.running.get(key) === mine) this.running.delete(key);
        });
      }
    } finally {
      await handle.close();
    }
    // The caller's cancel ends its wait; the extraction goes on for the rendition.
    return new Promise<Rendition>((resolve, reject) => {
      const onAbort = (): void => reject(new ToolCancelled());
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      made.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  /** Extracts `bytes` (null: too large to read) and stores the rendition. */
  private async make(
    userId: string,
    p: WorkspacePath,
    kind: DocumentKind,
    stamp: string,
    bytes: Buffer | null,
  ): Promise<Rendition> {
    const e = bytes ? await this.extractor.extract(kind, bytes) : this.extractor.sizeRefusal(Number.MAX_SAFE_INTEGER);
    const r = renditionOf(p.virtual, kind, e ?? { ok: false, reason: 'it is too large' });
    // A refusal that is not about the document (the reader busy) is answered, not kept.
    if (e && !e.ok && e.transient) return r;
    await this.store(userId, p, stamp, r).catch((e: unknown) =>
      // No room in the quota (or the folder is not writable): the text is answered, not kept.
      this.log?.info({ userId, err: e instanceof Error ? e.message : String(e) }, 'document rendition not stored'),
    );
    return r;
  }

  private async stored(jail: Jail, p: WorkspacePath, stamp: string): Promise<Rendition | null> {
    const opened = await jail.openRead(renditionPath(p)).catch(() => null);
    if (!opened) return null;
    try {
      const limit = this.extractor.options.maxChars * 4 + 64 * 1024;
      if (opened.size > limit) return null;
      return parse((await readUpTo(opened.handle, limit, opened.size)).toString('utf8'), stamp);
    } catch {
      return null;
    } finally {
      await opened.handle.close();
    }
  }

  /** Writes the rendition in place under the workspace's write lock, within the quota. */
  private async store(userId: string, p: WorkspacePath, stamp: string, r: Rendition): Promise<void> {
    const rp = renditionPath(p);
    const next = Buffer.from(serialize(stamp, r), 'utf8');
    await this.workspaces.exclusive(userId, async () => {
      const jail = await this.workspaces.jail(userId);
      const used = await this.workspaces.used(userId, jail);
      const left = Math.max(0, this.workspaces.limits.inodes - used.inodes);
      const target = await jail.openWrite(rp, {
        create: true,
        budget: { left, full: () => this.workspaces.inodesFull(rp.virtual, used) },
      });
      let written = false;
      try {
        await this.workspaces.ensureRoom(userId, jail, next.length - target.size, rp.virtual);
        await writeAllAt0(target.handle, next);
        await target.handle.truncate(next.length);
        written = true;
        this.workspaces.commit(userId, next.length - target.size, target.newInodes);
      } finally {
        if (!written) await target.discard();
        await target.close();
      }
    });
  }
}

/** Where the rendition of the document `p` lives. */
export function renditionPath(p: WorkspacePath): WorkspacePath {
  const dir = posix.dirname(p.virtual);
  return resolveWorkspacePath(nonToolPath(`${dir}/${RENDITIONS_DIR}/${posix.basename(p.virtual)}.txt`));
}
