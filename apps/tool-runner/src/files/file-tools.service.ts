import { Injectable, Optional } from '@nestjs/common';
import type { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { IMAGE_RESULT_TYPE, imageResultText, type ToolPath, WORKSPACE_ROOT } from '@skald/contracts';
import { documentKind, TEXT_KINDS } from '@skald/documents';
import { UPLOADS_DIR } from '../uploads/workspace-files.service';
import { DocumentRenditions } from '../documents/document-renditions.service';
import { describeImage, ImageRefused } from '../images/image-fit';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { StalePreview, ToolError } from '../tool-error';
import { ioError, Jail } from '../workspace/jail';
import { isMemoryPath, nonToolPath, resolveWorkspacePath, WorkspacePath } from '../workspace/workspace-path';
import { formatBytes, WorkspacesService } from '../workspace/workspaces.service';
import { asText, readUpTo, writeAllAt0 } from './file-io';
import { capOutput, renderRead, renderSearch } from './file-render';
import { grepFiles } from './grep-files';
import { assertPreviewBase } from './content-hash';
import { applyAppend, applyEdit, applyInsert, applyReplaceLines, EditError, EditResult } from './edit-ops';
import {
  AppendFileArgs,
  DeleteFileArgs,
  EditFileArgs,
  GrepFilesArgs,
  InsertAtLineArgs,
  ListFilesArgs,
  OpenFileArgs,
  ReadFileArgs,
  ReplaceLinesArgs,
  SearchFileArgs,
  WriteFileArgs,
} from './file-tool-args';
import { FILE_LIMITS, NOT_EXPANDED } from './file-limits.constants';
import { PatternPool } from '../patterns/pattern-pool';
import { looksBinary } from './text';

type Args<S extends z.ZodType> = z.output<S>;

/** Names `read_file` treats as images (when their header agrees). */
const IMAGE_NAME = /\.(png|jpe?g|webp|gif)$/i;
/** Bytes read to find an image's format and size (a JPEG's size may come after a large EXIF block). */
const IMAGE_HEADER_BYTES = 1024 * 1024;

/** The workspace file tools (PROTOCOL.md "Built-in tools"), jailed to the caller's workspace. */
@Injectable()
export class FileToolsService {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly patterns: PatternPool,
    @Optional() private readonly documents?: DocumentRenditions,
  ) {}

  // ------------------------------------------------------------------ reads

  async listFiles(ctx: ToolContext, args: Args<typeof ListFilesArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    const jail = await this.workspaces.jail(ctx.userId);
    const dir = await jail.openDir(p).catch((e: unknown) => {
      throw ioError(e, p);
    });
    const lines: string[] = [];
    let cut = false;
    const walk = async (handle: FileHandle, rel: string, level: number): Promise<void> => {
      const entries = (await jail.entries(handle)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
      for (const entry of entries) {
        if (lines.length >= FILE_LIMITS.listMaxEntries) {
          cut = true;
          return;
        }
        const name = rel + entry.name;
        if (entry.isDirectory()) {
          const skip = NOT_EXPANDED.has(entry.name);
          lines.push(
            await this.listLine(
              jail,
              handle,
              entry.name,
              `${name}/${skip && level < args.depth ? ' (not expanded)' : ''}`,
              args.detailed,
              'dir',
            ),
          );
          if (skip || level >= args.depth) continue;
          const child = await jail.openChildDir(handle, entry.name);
          if (!child) continue;
          try {
            await walk(child, `${name}/`, level + 1);
          } finally {
            await child.close();
          }
        } else if (!args.dirs_only) {
          const kind = entry.isSymbolicLink() ? 'link' : entry.isFile() ? 'file' : 'other';
          lines.push(await this.listLine(jail, handle, entry.name, name, args.detailed, kind));
        }
      }
    };
    try {
      await walk(dir, '', 1);
    } finally {
      await dir.close();
    }
    const what = args.dirs_only ? 'Directories' : 'Contents';
    const head = `${what} of ${p.virtual}/ (depth ${args.depth}):`.replace('//', '/');
    if (lines.length === 0) return { result: `${head}\n(empty)` };
    const tail = cut
      ? `\n[listing cut at ${FILE_LIMITS.listMaxEntries} entries; list a subdirectory or use a smaller depth]`
      : '';
    return { result: capOutput(`${head}\n${lines.join('\n')}`) + tail };
  }

  private async listLine(
    jail: Jail,
    dir: FileHandle,
    name: string,
    shown: string,
    detailed: boolean,
    kind: 'dir' | 'file' | 'link' | 'other',
  ): Promise<string> {
    if (!detailed) return kind === 'link' ? `${shown}@` : shown;
    const st = await jail.lstatChild(dir, name).catch(() => null);
    const size = kind === 'file' && st ? String(st.size) : '-';
    const mtime = st ? st.mtime.toISOString().slice(0, 16).replace('T', ' ') : '?';
    return `${size.padStart(10)}  ${mtime}  ${kind === 'link' ? `${shown}@` : shown}`;
  }

  async readFile(ctx: ToolContext, args: Args<typeof ReadFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    const image = IMAGE_NAME.test(p.virtual) ? await this.describeImage(ctx, p) : null;
    if (image) return { result: imageResultText(p.virtual, image), resultType: IMAGE_RESULT_TYPE };
    return { result: renderRead(p.virtual, await this.readText(ctx, p, 'read_file'), args) };
  }

  /**
   * `PNG, 1200×800 px, 34 KB` for a file named like an image whose header says it is one (the
   * model is shown the image itself through `tools.image`); null when it is not an image after
   * all, which is then read as any file.
   */
  private async describeImage(ctx: ToolContext, p: WorkspacePath): Promise<string | null> {
    const jail = await this.workspaces.jail(ctx.userId);
    const { handle, size } = await jail.openRead(p).catch((e: unknown) => {
      throw ioError(e, p);
    });
    try {
      const header = await readUpTo(handle, IMAGE_HEADER_BYTES, size);
      const facts = await describeImage(header).catch((e: unknown) => {
        if (e instanceof ImageRefused) return null;
        throw e;
      });
      return facts && `${facts.format.toUpperCase()}, ${facts.width}×${facts.height} px, ${formatBytes(size)}`;
    } finally {
      await handle.close();
    }
  }

  /**
   * A document's text rendition (see DocumentRenditions), or the file's own text: a CSV or HTML
   * file outside the uploads is the agent's own page or table, read (and edited) as its source.
   */
  private async readText(ctx: ToolContext, p: WorkspacePath, tool: string): Promise<string> {
    const kind = documentKind(p.virtual);
    const uploaded = p.virtual.startsWith(`${WORKSPACE_ROOT}/${UPLOADS_DIR}/`);
    if (kind && this.documents && (uploaded || !TEXT_KINDS.has(kind)))
      return this.documents.text(ctx.userId, p, kind, tool, ctx.signal);
    return this.readPlainText(ctx, p, tool);
  }

  /** `open_file`: a regular workspace file, shown to the user (the viewer reads it by `GET /files`). */
  async openFile(ctx: ToolContext, args: Args<typeof OpenFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    const jail = await this.workspaces.jail(ctx.userId);
    const opened = await jail.openRead(p).catch((e: unknown) => {
      throw ioError(e, p);
    });
    await opened.handle.close();
    return { result: `Showing ${p.virtual} to the user.`, fileOpened: p.virtual };
  }

  async searchFile(ctx: ToolContext, args: Args<typeof SearchFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return { result: renderSearch(p.virtual, await this.readText(ctx, p, 'search_file'), args) };
  }

  async grepFiles(ctx: ToolContext, args: Args<typeof GrepFilesArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return grepFiles(await this.workspaces.jail(ctx.userId), this.patterns, ctx, p, args);
  }

  // ------------------------------------------------------------------ writes

  async writeFile(ctx: ToolContext, args: Args<typeof WriteFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.modify(ctx, p, 'write_file', { create: true, mustBeText: false }, (_current, existed) => {
      const bytes = Buffer.byteLength(args.content, 'utf8');
      return {
        content: args.content,
        summary: `${existed ? 'Overwrote' : 'Created'} ${p.virtual} (${bytes} byte${bytes === 1 ? '' : 's'})`,
      };
    });
  }

  async editFile(ctx: ToolContext, args: Args<typeof EditFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.modify(ctx, p, 'edit_file', { create: false, mustBeText: true }, (current) =>
      applyEdit(current, { old: args.old, new: args.new, replaceAll: args.replace_all }, p.virtual),
    );
  }

  async insertAtLine(ctx: ToolContext, args: Args<typeof InsertAtLineArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.modify(ctx, p, 'insert_at_line', { create: false, mustBeText: true }, (current) =>
      applyInsert(current, { line: args.line, content: args.content, position: args.position }, p.virtual),
    );
  }

  async replaceLines(ctx: ToolContext, args: Args<typeof ReplaceLinesArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.modify(ctx, p, 'replace_lines', { create: false, mustBeText: true }, (current) =>
      applyReplaceLines(current, { fromLine: args.from_line, toLine: args.to_line, new: args.new }, p.virtual),
    );
  }

  async appendFile(ctx: ToolContext, args: Args<typeof AppendFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.modify(ctx, p, 'append_file', { create: true, mustBeText: true }, (current) =>
      applyAppend(current, { content: args.content }, p.virtual),
    );
  }

  /**
   * `delete_file`: one entry (see `Jail.remove`) under the workspace's write lock, the freed bytes
   * and entries credited to the measured usage. It asks for no room, so it works at or over the
   * quota. A judged landing binds it like a write's. Announces no `file_changed`: there is no file
   * to show.
   */
  async deleteFile(ctx: ToolContext, args: Args<typeof DeleteFileArgs>): Promise<ToolOutput> {
    const p = this.resolve(ctx, args.path);
    return this.workspaces.exclusive(ctx.userId, async () => {
      const jail = await this.workspaces.jail(ctx.userId);
      const landing = judgedLanding(ctx, 'path');
      const removed = await jail
        .remove(p, {
          recursive: args.recursive,
          maxEntries: FILE_LIMITS.deleteMaxEntries,
          signal: ctx.signal,
          ...(landing ? { landing } : {}),
        })
        .catch((e: unknown) => {
          // Whatever a failed recursive removal took away is measured again rather than guessed.
          if (args.recursive) this.workspaces.forgetUsage(ctx.userId);
          throw ioError(e, p);
        });
      this.workspaces.freed(ctx.userId, removed.bytes, removed.inodes);
      // A deleted document's text goes with it.
      if (removed.kind === 'file') await this.documents?.forget(ctx.userId, jail, p);
      if (!removed.complete && ctx.signal.aborted) throw new ToolCancelled();
      const size = formatBytes(removed.bytes);
      const entries = `${removed.inodes} entr${removed.inodes === 1 ? 'y' : 'ies'}`;
      if (!removed.complete)
        return {
          result:
            `Deleted ${entries} (${size}) below ${p.virtual}, then stopped at the limit of ` +
            `${FILE_LIMITS.deleteMaxEntries} entries a call; call delete_file again to delete the rest`,
        };
      switch (removed.kind) {
        case 'file':
          return { result: `Deleted ${p.virtual} (${size})` };
        case 'symlink':
          return { result: `Deleted the symlink ${p.virtual} (what it pointed to is untouched)` };
        case 'other':
          return { result: `Deleted ${p.virtual}` };
        case 'directory':
          return {
            result:
              removed.inodes === 1
                ? `Deleted the empty directory ${p.virtual}`
                : `Deleted the directory ${p.virtual} and everything in it (${entries}, ${size})`,
          };
      }
    });
  }

  // ------------------------------------------------------------------ shared

  /** A workspace path from the model's argument (memory paths never reach this service: see ToolRouter). */
  private resolve(ctx: ToolContext, path: ToolPath): WorkspacePath {
    if (isMemoryPath(path))
      throw new ToolError('invalid_argument', `${path} is a memory document, not a workspace file`);
    return resolveWorkspacePath(path, ctx.workdir);
  }

  private async readPlainText(ctx: ToolContext, p: WorkspacePath, tool: string): Promise<string> {
    const jail = await this.workspaces.jail(ctx.userId);
    // A small regular file reached without a symlink: read on the event loop (see readSmallSync).
    const quick = jail.readSmallSync(p, Math.min(this.workspaces.syncReadBytes, FILE_LIMITS.readMaxBytes));
    if (quick) return asText(quick.bytes, quick.size, p, tool);
    const { handle, size } = await jail.openRead(p);
    try {
      if (size > FILE_LIMITS.readMaxBytes) {
        throw new ToolError(
          'too_large',
          `${tool}: ${p.virtual} is too large (${formatBytes(size)}; the limit is ${formatBytes(FILE_LIMITS.readMaxBytes)}). ` +
            'Use grep_files to find what you need, or execute_cmd with head, tail or sed -n to read a part.',
        );
      }
      return asText(await readUpTo(handle, FILE_LIMITS.readMaxBytes, size), size, p, tool);
    } finally {
      await handle.close();
    }
  }

  /**
   * Read-modify-write of one file under the workspace's write lock: the same descriptor is read,
   * checked against the quota and rewritten in place (offset 0, then truncate), so a symlink swapped
   * meanwhile cannot redirect the write.
   */
  private async modify(
    ctx: ToolContext,
    p: WorkspacePath,
    tool: string,
    opts: { create: boolean; mustBeText: boolean },
    compute: (current: string, existed: boolean) => EditResult,
  ): Promise<ToolOutput> {
    const expected = ctx.expectedBaseHash;
    return this.workspaces.exclusive(ctx.userId, async () => {
      const jail = await this.workspaces.jail(ctx.userId);
      let target;
      try {
        const used = opts.create ? await this.workspaces.used(ctx.userId, jail) : { inodes: 0 };
        const left = Math.max(0, this.workspaces.limits.inodes - used.inodes);
        const landing = judgedLanding(ctx, 'path');
        target = await jail.openWrite(p, {
          create: opts.create,
          budget: { left, full: () => this.workspaces.inodesFull(p.virtual, used) },
          ...(landing ? { landing } : {}),
        });
      } catch (e) {
        // Approved on a preview of a file that is gone now.
        if (expected !== undefined && e instanceof ToolError && e.code === 'not_found')
          throw new StalePreview(p.virtual);
        throw e;
      }
      let written = false;
      try {
        const { handle, size, created, newInodes } = target;
        // A preview is never computed from a file this large: it grew since.
        if (expected !== undefined && size > FILE_LIMITS.editMaxBytes) throw new StalePreview(p.virtual);
        if (size > FILE_LIMITS.editMaxBytes && opts.mustBeText) {
          throw new ToolError(
            'too_large',
            `${tool}: ${p.virtual} is too large to edit (${formatBytes(size)}; the limit is ${formatBytes(FILE_LIMITS.editMaxBytes)})`,
          );
        }
        const buf = (opts.mustBeText || expected !== undefined) && size > 0 ? await readUpTo(handle, size) : null;
        assertPreviewBase(expected, created ? null : (buf ?? Buffer.alloc(0)), p.virtual);
        let current = '';
        if (opts.mustBeText && buf) {
          if (looksBinary(buf))
            throw new ToolError('binary', `${tool}: ${p.virtual} is a binary file; only text files can be edited`);
          current = buf.toString('utf8');
        }
        let edit: EditResult;
        try {
          edit = compute(current, !created);
        } catch (e) {
          if (e instanceof EditError) throw new ToolError('invalid_argument', e.message);
          throw e;
        }
        const next = Buffer.from(edit.content, 'utf8');
        await this.workspaces.ensureRoom(ctx.userId, jail, next.length - size, p.virtual);
        if (ctx.signal.aborted) throw new ToolCancelled();
        await writeAllAt0(handle, next);
        await handle.truncate(next.length);
        written = true;
        this.workspaces.commit(ctx.userId, next.length - size, newInodes);
        return { result: edit.summary, fileChanged: p.virtual };
      } catch (e) {
        if (e instanceof ToolCancelled) throw e;
        throw ioError(e, p);
      } finally {
        if (!written) await target.discard();
        await target.close();
      }
    });
  }
}

/**
 * The workspace path the gate judged the path argument `arg` to land on, if it was judged with one:
 * the write then lands there or fails (`Jail.openWrite`).
 */
function judgedLanding(ctx: ToolContext, arg: string): WorkspacePath | null {
  const judged = ctx.judgedLanding?.[arg];
  if (typeof judged !== 'string' || isMemoryPath(judged)) return null;
  return resolveWorkspacePath(nonToolPath(judged));
}
