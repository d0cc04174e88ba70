import { Injectable } from '@nestjs/common';
import { z } from 'zod';
import type { ToolPath } from '@skald/contracts';
import { ToolContext, ToolOutput } from '../exec/tool-context';
import { assertPreviewBase } from '../files/content-hash';
import { applyAppend, applyEdit, applyInsert, applyReplaceLines, EditError, EditResult } from '../files/edit-ops';
import {
  AppendFileArgs,
  EditFileArgs,
  InsertAtLineArgs,
  ListFilesArgs,
  ReadFileArgs,
  ReplaceLinesArgs,
  SearchFileArgs,
  WriteFileArgs,
} from '../files/file-tool-args';
import { renderRead, renderSearch } from '../files/file-render';
import { ToolError } from '../tool-error';
import { formatBytes } from '../workspace/workspaces.service';
import { nonToolPath } from '../workspace/workspace-path';
import { memoryVirtual, MemoryPath, parseMemoryPath } from './memory-path';
import { MemoryHit, MemoryRepository } from './memory.repository';

type Args<S extends z.ZodType> = z.output<S>;

/** Largest memory document. */
export const MEMORY_DOC_MAX_BYTES = 1024 * 1024;
const LIST_MAX = 1000;
const SEARCH_MAX = 10;
/** A turn's memory context: at most this many documents, in at most this many characters (by default). */
const CONTEXT_HITS = 5;
const CONTEXT_MAX_CHARS = 2000;

/**
 * The file tools on memory documents (`user-memory/…` per user, `shared-memory/…` for everyone),
 * `memory_search`, and the memory context of a turn. Shared documents are read by every agent and
 * written only from an admin's session (the request's actor role).
 */
@Injectable()
export class MemoryToolsService {
  constructor(private readonly repo: MemoryRepository) {}

  async listFiles(ctx: ToolContext, args: Args<typeof ListFilesArgs>): Promise<ToolOutput> {
    const p = parseMemoryPath(args.path);
    const docs = await this.repo.list({ userId: ctx.userId, scope: p.scope, key: p.key }, LIST_MAX + 1);
    const head = `Contents of ${p.virtual}/:`;
    if (docs.length === 0) {
      const exact = p.key !== '' && (await this.repo.get({ userId: ctx.userId, scope: p.scope, key: p.key }));
      if (exact !== false && exact !== null) return { result: `${head}\n${p.virtual}` };
      return { result: `${head}\n(empty)` };
    }
    const base = p.key === '' ? '' : `${p.key}/`;
    const lines = docs.slice(0, LIST_MAX).map((d) => {
      const rel = d.path.slice(base.length);
      if (!args.detailed) return rel;
      return `${String(d.size).padStart(10)}  ${d.updatedAt.toISOString().slice(0, 16).replace('T', ' ')}  ${rel}`;
    });
    const cut = docs.length > LIST_MAX ? `\n[listing cut at ${LIST_MAX} documents]` : '';
    return { result: `${head}\n${lines.join('\n')}${cut}` };
  }

  async readFile(ctx: ToolContext, args: Args<typeof ReadFileArgs>): Promise<ToolOutput> {
    const p = this.document(args.path);
    return { result: renderRead(p.virtual, await this.content(ctx, p), args) };
  }

  async searchFile(ctx: ToolContext, args: Args<typeof SearchFileArgs>): Promise<ToolOutput> {
    const p = this.document(args.path);
    return { result: renderSearch(p.virtual, await this.content(ctx, p), args) };
  }

  async writeFile(ctx: ToolContext, args: Args<typeof WriteFileArgs>): Promise<ToolOutput> {
    return this.modify(ctx, args.path, true, (current, p) => {
      const bytes = Buffer.byteLength(args.content, 'utf8');
      return {
        content: args.content,
        summary: `${current === null ? 'Created' : 'Overwrote'} ${p.virtual} (${bytes} byte${bytes === 1 ? '' : 's'})`,
      };
    });
  }

  async editFile(ctx: ToolContext, args: Args<typeof EditFileArgs>): Promise<ToolOutput> {
    return this.modify(ctx, args.path, false, (current, p) =>
      applyEdit(current ?? '', { old: args.old, new: args.new, replaceAll: args.replace_all }, p.virtual),
    );
  }

  async insertAtLine(ctx: ToolContext, args: Args<typeof InsertAtLineArgs>): Promise<ToolOutput> {
    return this.modify(ctx, args.path, false, (current, p) =>
      applyInsert(current ?? '', { line: args.line, content: args.content, position: args.position }, p.virtual),
    );
  }

  async replaceLines(ctx: ToolContext, args: Args<typeof ReplaceLinesArgs>): Promise<ToolOutput> {
    return this.modify(ctx, args.path, false, (current, p) =>
      applyReplaceLines(current ?? '', { fromLine: args.from_line, toLine: args.to_line, new: args.new }, p.virtual),
    );
  }

  async appendFile(ctx: ToolContext, args: Args<typeof AppendFileArgs>): Promise<ToolOutput> {
    return this.modify(ctx, args.path, true, (current, p) =>
      applyAppend(current ?? '', { content: args.content }, p.virtual),
    );
  }

  /** `memory_search {query}`: ranked documents of the caller and the shared ones, with snippets. */
  async search(ctx: ToolContext, query: string): Promise<ToolOutput> {
    const hits = await this.repo.search(ctx.userId, query, SEARCH_MAX);
    if (hits.length === 0) return { result: `No memory documents match "${query}".` };
    const lines = hits.map((h) => `${memoryVirtual(h.scope, h.path)}\n  ${oneLine(h.snippet)}`);
    return {
      result: `${hits.length} memory document${hits.length === 1 ? '' : 's'} match "${query}":\n${lines.join('\n')}\n(read one with read_file for its whole content)`,
    };
  }

  /**
   * A turn's memory, in one statement: the documents at `paths` (the agents' `inject_memory` files:
   * the caller's `user-memory/…` and the shared ones; a missing document or a path that is not a
   * memory document reads as null) and, for `query` (the user's message; null: none asked), the
   * memory context the loop injects — the most relevant documents, short; null when none.
   */
  async forTurn(
    userId: string,
    paths: readonly string[],
    query: string | null,
    maxChars = CONTEXT_MAX_CHARS,
  ): Promise<{ documents: Array<{ path: string; content: string | null }>; context: string | null }> {
    const parsed = paths.map((path) => {
      try {
        return this.document(nonToolPath(path));
      } catch {
        return null;
      }
    });
    const keys = parsed.flatMap((p) => (p ? [{ scope: p.scope, key: p.key }] : []));
    const search = query !== null && query.trim() !== '' ? query : null;
    const { contents, hits } =
      keys.length > 0 || search !== null
        ? await this.repo.documentsAndSearch(userId, keys, search, CONTEXT_HITS)
        : { contents: [], hits: [] };
    let next = 0;
    return {
      documents: paths.map((path, i) => ({ path, content: parsed[i] ? contents[next++] : null })),
      context: search === null ? null : contextOf(hits, maxChars),
    };
  }

  /** The current content of a document, for previews; null when it does not exist. */
  async current(ctx: ToolContext, path: ToolPath): Promise<{ path: MemoryPath; content: string | null }> {
    const p = this.document(path);
    return { path: p, content: await this.repo.get({ userId: ctx.userId, scope: p.scope, key: p.key }) };
  }

  /** Refuses a write of shared memory unless the actor is an admin. */
  assertWritable(ctx: ToolContext, p: MemoryPath): void {
    if (p.scope === 'shared' && ctx.role !== 'admin') {
      throw new ToolError(
        'forbidden',
        `${p.virtual} is read-only here: shared-memory/ is written only from an admin's session`,
      );
    }
  }

  private document(path: ToolPath): MemoryPath {
    const p = parseMemoryPath(path);
    if (p.key === '') throw new ToolError('not_a_file', `${p.virtual} is a directory, not a document`);
    return p;
  }

  private async content(ctx: ToolContext, p: MemoryPath): Promise<string> {
    const content = await this.repo.get({ userId: ctx.userId, scope: p.scope, key: p.key });
    if (content === null) throw new ToolError('not_found', `no such memory document: ${p.virtual}`);
    return content;
  }

  private async modify(
    ctx: ToolContext,
    path: ToolPath,
    create: boolean,
    compute: (current: string | null, p: MemoryPath) => EditResult,
  ): Promise<ToolOutput> {
    const p = this.document(path);
    this.assertWritable(ctx, p);
    const edit = await this.repo.modify({ userId: ctx.userId, scope: p.scope, key: p.key }, ctx.userId, (current) => {
      // Under the row lock of the write: approved on a preview of another version → nothing written.
      assertPreviewBase(ctx.expectedBaseHash, current, p.virtual);
      if (current === null && !create) throw new ToolError('not_found', `no such memory document: ${p.virtual}`);
      let result: EditResult;
      try {
        result = compute(current, p);
      } catch (e) {
        if (e instanceof EditError) throw new ToolError('invalid_argument', e.message);
        throw e;
      }
      const bytes = Buffer.byteLength(result.content, 'utf8');
      if (bytes > MEMORY_DOC_MAX_BYTES) {
        throw new ToolError(
          'too_large',
          `${p.virtual} would be ${formatBytes(bytes)}; a memory document holds at most ${formatBytes(MEMORY_DOC_MAX_BYTES)}`,
        );
      }
      return result;
    });
    return { result: edit.summary, fileChanged: p.virtual };
  }
}

/** The memory context of a turn from its search hits (best first); null when there are none. */
function contextOf(hits: readonly MemoryHit[], maxChars: number): string | null {
  if (hits.length === 0) return null;
  let text = 'Memory documents that may be relevant (read them with read_file for more):';
  for (const h of hits) {
    const line = `\n- ${memoryVirtual(h.scope, h.path)}: ${oneLine(h.snippet)}`;
    if (text.length + line.length > maxChars) {
      if (text.includes('\n- ')) break;
      text += line.slice(0, Math.max(0, maxChars - text.length - 1)) + '…';
      break;
    }
    text += line;
  }
  return text;
}

function oneLine(s: string): string {
  return s.replace(/\s+/g, ' ').trim();
}
