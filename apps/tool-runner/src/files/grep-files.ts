import { FileHandle } from 'node:fs/promises';
import { z } from 'zod';
import { RE2_SYNTAX_NOTE } from '@skald/contracts';
import { ToolCancelled, ToolContext, ToolOutput } from '../exec/tool-context';
import { CompiledGlob, GlobError, globSubject, globToRe2 } from '../patterns/glob';
import { MAX_LINE_HITS, PatternFailure, PatternPool } from '../patterns/pattern-pool';
import { ToolError } from '../tool-error';
import { ioError, Jail } from '../workspace/jail';
import { childPath, WorkspacePath } from '../workspace/workspace-path';
import { formatBytes } from '../workspace/workspaces.service';
import { readInto } from './file-io';
import type { GrepFilesArgs } from './file-tool-args';
import { FILE_LIMITS, NOT_EXPANDED } from './file-limits.constants';
import { capOutput, contextBlocks } from './file-render';
import { displayLines, looksBinary } from './text';

/**
 * `grep_files` under `p` (a directory walked in name order, or one file): the files' bytes read
 * within the limits, the glob and the pattern run by the pattern pool (RE2, off the event loop),
 * the answer paged as files, counts or lines with context.
 */
export async function grepFiles(
  jail: Jail,
  patterns: PatternPool,
  ctx: ToolContext,
  p: WorkspacePath,
  args: z.output<typeof GrepFilesArgs>,
): Promise<ToolOutput> {
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
      const idx = await patterns
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

  const found = await patterns
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
        blocks.push(contextBlocks(mine, lines, args.context_lines, (i, sep, l) => `${f.path}${sep}${i + 1}${sep}${l}`));
      }
      return { result: capOutput(blocks.join('\n--\n')) + footer(from, from + page.length, all.length, 'matches') };
    }
  }
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
