import { Injectable } from '@nestjs/common';
import { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { StalePreview, ToolError } from '../tool-error';
import { ioError, Jail } from '../workspace/jail';
import { childPath, isMemoryPath, resolveWorkspacePath, WorkspacePath } from '../workspace/workspace-path';
import { formatBytes, WorkspacesService } from '../workspace/workspaces.service';
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
import { CompiledGlob, GlobError, globSubject, globToRe2 } from '../patterns/glob';
import { MAX_LINE_HITS, PatternFailure, PatternPool } from '../patterns/pattern-pool';
import { RE2_SYNTAX_NOTE } from '@skald/contracts';
import { displayLines, looksBinary, numbered } from './text';

type Args<S extends z.ZodType> = z.output<S>;

/** The workspace file tools (PROTOCOL.md "Built-in tools"), jailed to the caller's workspace. */
@Injectable()
export class FileToolsService {
  constructor(
    private readonly workspaces: WorkspacesService,
    private readonly patterns: PatternPool,
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
    return { result: renderRead(p.virtual, await this.readText(ctx, p, 'read_file'), args) };
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
    const jail = await this.workspaces.jail(ctx.userId);
    let glob: CompiledGlob | null = null;
    try {
      glob = args.glob === undefined ? null : globToRe2(args.glob);
    } catch (e) {
      if (e instanceof GlobError) throw new ToolError('invalid_argument', `grep_files: invalid glob: ${e.message}`);
      throw e;
    }
    const files: { path: string; bytes: Buffer }[] = [];
    const skipped = { binary: 0, large: 0, truncated: false };
    let total = 0;

    const take = async (handle: FileHandle, size: number, virtual: string): Promise<void> => {
      if (size > FILE_LIMITS.grepMaxFileBytes) {
        skipped.large++;
        return;
      }
      if (total + size > FILE_LIMITS.grepMaxTotalBytes || files.length >= FILE_LIMITS.grepMaxFiles) {
        skipped.truncated = true;
        return;
      }
      // Shared memory: the pattern worker reads these bytes without a copy.
      const shared = Buffer.from(new SharedArrayBuffer(size));
      const buf = shared.subarray(0, await readInto(handle, shared));
      if (looksBinary(buf)) {
        skipped.binary++;
        return;
      }
      total += buf.length;
      files.push({ path: virtual, bytes: buf });
    };

    let dir: FileHandle | null = null;
    try {
      dir = await jail.openDir(p);
    } catch (e) {
      if (!(e instanceof ToolError && e.code === 'not_a_directory')) throw ioError(e, p);
      // A file: grep just that one (the glob does not apply).
      const opened = await jail.openRead(p);
      try {
        await take(opened.handle, opened.size, p.virtual);
      } finally {
        await opened.handle.close();
      }
    }
    if (dir) {
      // The regular files below the path, then the glob over all of them in one job of the pool.
      const candidates: { rel: string; at: WorkspacePath }[] = [];
      const walk = async (handle: FileHandle, at: WorkspacePath, rel: string): Promise<void> => {
        const entries = (await jail.entries(handle)).sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
        for (const entry of entries) {
          if (skipped.truncated || ctx.signal.aborted) return;
          const relPath = rel + entry.name;
          if (entry.isDirectory()) {
            if (NOT_EXPANDED.has(entry.name)) continue;
            const child = await jail.openChildDir(handle, entry.name);
            if (!child) continue;
            try {
              await walk(child, childPath(at, entry.name), `${relPath}/`);
            } finally {
              await child.close();
            }
          } else if (entry.isFile()) {
            if (candidates.length >= FILE_LIMITS.grepMaxCandidates) skipped.truncated = true;
            else candidates.push({ rel: relPath, at: childPath(at, entry.name) });
          }
        }
      };
      try {
        await walk(dir, p, '');
      } finally {
        await dir.close();
      }
      if (ctx.signal.aborted) throw new ToolCancelled();
      let selected = candidates;
      if (glob && candidates.length > 0) {
        const g = glob;
        const idx = await this.patterns
          .matchingSubjects(
            ctx.userId,
            g.source,
            candidates.map((c) => globSubject(g, c.rel)),
            ctx.signal,
          )
          .catch((e: unknown) => patternFailure(e, `glob ${args.glob}`));
        selected = idx.map((i) => candidates[i]);
      }
      for (const c of selected) {
        if (skipped.truncated || ctx.signal.aborted) break;
        // Gone or swapped for something else since the walk: not part of the search.
        const opened = await jail.openRead(c.at).catch(() => null);
        if (!opened) continue;
        try {
          await take(opened.handle, opened.size, c.at.virtual);
        } finally {
          await opened.handle.close();
        }
      }
    }
    if (ctx.signal.aborted) throw new ToolCancelled();

    const found = await this.patterns
      .matchingLines(
        ctx.userId,
        args.pattern,
        args.case_sensitive,
        files.map((f) => f.bytes),
        ctx.signal,
      )
      .catch((e: unknown) => patternFailure(e, `regular expression /${args.pattern}/`));
    const hits = found.hits;
    const notes: string[] = [];
    if (skipped.binary > 0) notes.push(`${skipped.binary} binary file${skipped.binary === 1 ? '' : 's'} skipped`);
    if (skipped.large > 0)
      notes.push(
        `${skipped.large} file${skipped.large === 1 ? '' : 's'} over ${formatBytes(FILE_LIMITS.grepMaxFileBytes)} skipped`,
      );
    if (skipped.truncated) notes.push('search stopped early: too much data; narrow the path or glob');
    if (found.truncated)
      notes.push(`search stopped after ${MAX_LINE_HITS.toLocaleString('en')} matching lines; narrow the pattern`);
    const footer = (shownFrom: number, shownTo: number, of: number, unit: string): string => {
      const parts = [...notes];
      if (shownTo < of || shownFrom > 0) {
        parts.unshift(
          `${unit} ${of === 0 ? 0 : shownFrom + 1}–${shownTo} of ${of}${shownTo < of ? `; use offset=${shownTo} for more` : ''}`,
        );
      }
      return parts.length > 0 ? `\n[${parts.join('; ')}]` : '';
    };

    const matched = files.map((f, i) => ({ ...f, lines: hits[i] })).filter((f) => f.lines.length > 0);
    if (matched.length === 0) {
      return {
        result: `No matches for /${args.pattern}/ in ${p.virtual}${notes.length ? `\n[${notes.join('; ')}]` : ''}`,
      };
    }
    const from = args.offset;
    switch (args.output_mode) {
      case 'files_only': {
        const page = matched.slice(from, from + args.limit);
        return {
          result:
            capOutput(page.map((f) => f.path).join('\n')) + footer(from, from + page.length, matched.length, 'files'),
        };
      }
      case 'count': {
        const page = matched.slice(from, from + args.limit);
        return {
          result:
            capOutput(page.map((f) => `${f.path}: ${f.lines.length}`).join('\n')) +
            footer(from, from + page.length, matched.length, 'files'),
        };
      }
      case 'content': {
        const all = matched.flatMap((f) => f.lines.map((line) => ({ f, line })));
        const page = all.slice(from, from + args.limit);
        const blocks: string[] = [];
        for (const f of matched) {
          const mine = page.filter((h) => h.f === f).map((h) => h.line);
          if (mine.length === 0) continue;
          const lines = displayLines(f.bytes.toString('utf8'));
          blocks.push(
            contextBlocks(mine, lines, args.context_lines, (i, sep, l) => `${f.path}${sep}${i + 1}${sep}${l}`),
          );
        }
        return { result: capOutput(blocks.join('\n--\n')) + footer(from, from + page.length, all.length, 'matches') };
      }
    }
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
      const landing = judgedLanding(ctx);
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
  private resolve(ctx: ToolContext, path: string): WorkspacePath {
    if (isMemoryPath(path))
      throw new ToolError('invalid_argument', `${path} is a memory document, not a workspace file`);
    return resolveWorkspacePath(path, ctx.workdir);
  }

  private async readText(ctx: ToolContext, p: WorkspacePath, tool: string): Promise<string> {
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
        const landing = judgedLanding(ctx);
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
 * The workspace path the gate judged this write to land on (a file tool has one path), if it was
 * judged with one: the write then lands there or fails (`Jail.openWrite`).
 */
function judgedLanding(ctx: ToolContext): WorkspacePath | null {
  const judged = ctx.judgedLanding?.[0];
  if (typeof judged !== 'string' || isMemoryPath(judged)) return null;
  return resolveWorkspacePath(judged);
}

/** A file's bytes as text, or the error the model reads for a binary file. */
function asText(buf: Buffer, size: number, p: WorkspacePath, tool: string): string {
  if (looksBinary(buf)) {
    throw new ToolError(
      'binary',
      `${tool}: ${p.virtual} is a binary file (${formatBytes(size)}); only text files can be read`,
    );
  }
  return buf.toString('utf8');
}

/**
 * Reads at most `max` bytes from offset 0 into a buffer sized for the `expected` size (one byte
 * more, to notice growth): a file that grew since its stat is read on, doubling, up to `max`.
 */
export async function readUpTo(handle: FileHandle, max: number, expected = max): Promise<Buffer> {
  let buf = Buffer.allocUnsafe(Math.max(1, Math.min(max, expected + 1)));
  let got = await readInto(handle, buf);
  while (got === buf.length && buf.length < max) {
    const bigger = Buffer.allocUnsafe(Math.min(max, buf.length * 2));
    buf.copy(bigger, 0, 0, got);
    buf = bigger;
    got = await readInto(handle, buf, got);
  }
  return buf.subarray(0, got);
}

/** Fills `buf` from file offset `from` (= buffer offset; less at end of file); answers the bytes in it. */
async function readInto(handle: FileHandle, buf: Buffer, from = 0): Promise<number> {
  let got = from;
  while (got < buf.length) {
    const { bytesRead } = await handle.read(buf, got, buf.length - got, got);
    if (bytesRead === 0) break;
    got += bytesRead;
  }
  return got;
}

/** A pattern job that did not answer, as the error the model reads (what failed, and what to do). */
function patternFailure(e: unknown, what: string): never {
  if (!(e instanceof PatternFailure)) throw e;
  switch (e.kind) {
    case 'syntax':
      throw new ToolError(
        'invalid_argument',
        what.startsWith('glob')
          ? `grep_files: invalid ${what}: ${e.message}`
          : `grep_files: unsupported or invalid ${what}: ${e.message}. ${RE2_SYNTAX_NOTE}`,
      );
    case 'timeout':
      throw new ToolError('timed_out', `grep_files: ${e.message}; use a simpler pattern or a narrower path or glob`);
    case 'memory':
      throw new ToolError('too_large', `grep_files: ${e.message}; use a simpler pattern or a narrower path or glob`);
    case 'busy':
      throw new ToolError('unavailable', `grep_files: ${e.message}`);
    case 'crashed':
      throw new ToolError('io', `grep_files: ${e.message}`);
    case 'cancelled':
      throw new ToolCancelled();
  }
}

async function writeAllAt0(handle: FileHandle, data: Buffer): Promise<void> {
  let done = 0;
  while (done < data.length) {
    const { bytesWritten } = await handle.write(data, done, data.length - done, done);
    done += bytesWritten;
  }
}

/** `read_file`'s answer for a text: numbered lines of the asked range, capped, with a pointer to the rest. */
export function renderRead(virtual: string, text: string, args: Args<typeof ReadFileArgs>): string {
  const lines = displayLines(text);
  const n = lines.length;
  if (n === 0) return `(${virtual} is empty)`;
  const start = args.start_line ?? 1;
  if (start > n)
    throw new ToolError(
      'invalid_argument',
      `read_file: start_line ${start} is past the end of ${virtual} (${n} line${n === 1 ? '' : 's'})`,
    );
  if (args.end_line !== undefined && args.end_line < start) {
    throw new ToolError('invalid_argument', `read_file: end_line ${args.end_line} is before start_line ${start}`);
  }
  const limit = args.limit ?? (args.end_line === undefined ? FILE_LIMITS.readDefaultLines : Number.MAX_SAFE_INTEGER);
  const end = Math.min(n, args.end_line ?? n, start + limit - 1);
  const out: string[] = [];
  let chars = 0;
  let last = start - 1;
  for (let i = start; i <= end; i++) {
    const line = numbered(i, lines[i - 1]);
    if (chars + line.length + 1 > FILE_LIMITS.outputMaxChars && out.length > 0) break;
    out.push(line);
    chars += line.length + 1;
    last = i;
  }
  let result = out.join('\n');
  if (start > 1 || last < n) {
    result += `\n[lines ${start}–${last} of ${n}${last < n ? `; call read_file with start_line=${last + 1} to read more` : ''}]`;
  }
  return result;
}

/** `search_file`'s answer for a text: matching lines with context, grep-style. */
export function renderSearch(virtual: string, text: string, args: Args<typeof SearchFileArgs>): string {
  const lines = displayLines(text);
  const needle = args.query.toLowerCase();
  const hits: number[] = [];
  lines.forEach((l, i) => {
    if (l.toLowerCase().includes(needle)) hits.push(i);
  });
  if (hits.length === 0) return `No matches for "${args.query}" in ${virtual}`;
  const shown = hits.slice(0, FILE_LIMITS.searchMaxMatches);
  const body = contextBlocks(
    shown,
    lines,
    args.context_lines,
    (i, sep, l) => `${String(i + 1).padStart(6)}${sep} ${l}`,
  );
  const more =
    hits.length > shown.length ? `\n[${hits.length - shown.length} more matches not shown; narrow the query]` : '';
  const head = `${hits.length} match${hits.length === 1 ? '' : 'es'} for "${args.query}" in ${virtual}:\n${body}`;
  return capOutput(head) + more;
}

/** Cuts tool output at the output cap, saying so. */
function capOutput(text: string): string {
  if (text.length <= FILE_LIMITS.outputMaxChars) return text;
  return `${text.slice(0, FILE_LIMITS.outputMaxChars)}\n[output cut at ${FILE_LIMITS.outputMaxChars} characters; narrow the request]`;
}

/** grep-style blocks: matching lines with `:`, context lines with `-`, groups separated by `--`. */
function contextBlocks(
  hits: number[],
  lines: string[],
  context: number,
  format: (i: number, sep: ':' | '-', line: string) => string,
): string {
  const hitSet = new Set(hits);
  const out: string[] = [];
  let lastShown = -2;
  for (const h of hits) {
    const from = Math.max(0, h - context, lastShown + 1);
    const to = Math.min(lines.length - 1, h + context);
    if (lastShown >= 0 && from > lastShown + 1) out.push('--');
    for (let i = from; i <= to; i++) {
      out.push(
        format(
          i,
          hitSet.has(i) ? ':' : '-',
          (lines[i] ?? '').length > 2000 ? `${lines[i].slice(0, 2000)}…` : (lines[i] ?? ''),
        ),
      );
      lastShown = i;
    }
  }
  return out.join('\n');
}
