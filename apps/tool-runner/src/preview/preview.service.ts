import { Injectable, Optional } from '@nestjs/common';
import { z } from 'zod';
import {
  ApprovalPreview,
  BUILTIN_TOOLS_BY_NAME,
  builtinTool,
  ParsedRequestOf,
  type BuiltinToolOf,
  type FileWriteToolName,
  type ToolPath,
} from '@skald/contracts';
import { ToolContext } from '../exec/tool-context';
import { sessionWorkdir } from '../exec/tool-exec.service';
import { contentHash } from '../files/content-hash';
import { applyAppend, applyEdit, applyInsert, applyReplaceLines, EditError } from '../files/edit-ops';
import { FILE_LIMITS } from '../files/file-limits.constants';
import { looksBinary } from '../files/text';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { DanglingSymlink, ToolError } from '../tool-error';
import { isMemoryPath, resolveWorkspacePath } from '../workspace/workspace-path';
import { WorkspacesService } from '../workspace/workspaces.service';

/** Errors that make a write impossible whatever the human answers. */
function refusal(e: unknown): e is ToolError {
  return (e instanceof ToolError && e.code === 'outside_workspace') || e instanceof DanglingSymlink;
}

export type PreviewRequest = ParsedRequestOf<'tools.preview'>;

/** New content from current content (null: the file is new; null back: no preview). */
type Apply<N extends FileWriteToolName> = (
  current: string | null,
  args: z.output<BuiltinToolOf<N>['args']>,
  path: string,
) => string | null;

/**
 * One preview per file-writing tool of the registry: a write tool without one does not compile.
 * Null: the tool writes no new content to show (a deletion); its card shows the call itself.
 */
export const PREVIEWS: { readonly [N in FileWriteToolName]: Apply<N> | null } = {
  write_file: (_c, a) => a.content,
  edit_file: (c, a, p) =>
    c === null ? null : applyEdit(c, { old: a.old, new: a.new, replaceAll: a.replace_all }, p).content,
  insert_at_line: (c, a, p) =>
    c === null ? null : applyInsert(c, { line: a.line, content: a.content, position: a.position }, p).content,
  replace_lines: (c, a, p) =>
    c === null ? null : applyReplaceLines(c, { fromLine: a.from_line, toLine: a.to_line, new: a.new }, p).content,
  append_file: (c, a, p) => applyAppend(c ?? '', { content: a.content }, p).content,
  delete_file: null,
};

function isFileWrite(name: string): name is FileWriteToolName {
  return Object.hasOwn(PREVIEWS, name) && BUILTIN_TOOLS_BY_NAME.get(name)?.writesFile === true;
}

/**
 * `tools.preview`: the diff an approval card shows, computed from the caller's workspace (or
 * memory documents) with the very edit functions the tool applies, so the human approves exactly
 * what will be written. `base_hash` is the SHA-256 of the file it was computed from. Null when no
 * preview can be computed (not a write tool, invalid arguments, a binary or too large file, an edit
 * that would fail); the tool itself then reports the error.
 */
@Injectable()
export class PreviewService {
  constructor(
    private readonly workspaces: WorkspacesService,
    @Optional() private readonly memory?: MemoryToolsService,
  ) {}

  async preview(req: PreviewRequest): Promise<ApprovalPreview | null> {
    const name = req.name;
    if (!isFileWrite(name)) return null;
    const apply = PREVIEWS[name] as ((current: string | null, args: never, path: string) => string | null) | null;
    const parsed = builtinTool(name).args.safeParse(req.arguments);
    if (!parsed.success) return null;
    try {
      if (!apply) {
        await this.assertReachable(req, parsed.data.path);
        return null;
      }
      const current = await this.current(req, parsed.data.path);
      if (!current) return null;
      const next = apply(current.text, parsed.data as never, current.virtual);
      if (next === null) return null;
      return {
        path: current.virtual,
        ...(current.text !== null ? { old_content: current.text } : {}),
        new_content: next,
        ...(current.hash !== null ? { base_hash: current.hash } : {}),
      };
    } catch (e) {
      if (refusal(e)) throw e;
      if (e instanceof EditError || e instanceof ToolError) return null;
      throw e;
    }
  }

  /**
   * The `tools.preview` reply. A path that resolves outside the workspace (lexically, or through a
   * symlink, dangling ones too) or through a dangling symlink is `refused` with the jail's
   * sentence: such a write can never run as previewed, so no human is asked about it.
   */
  async reply(req: PreviewRequest): Promise<{ preview: ApprovalPreview | null; refused?: string }> {
    try {
      return { preview: await this.preview(req) };
    } catch (e) {
      if (refusal(e)) return { preview: null, refused: e.message };
      throw e;
    }
  }

  /**
   * A tool without a preview still has its path checked the way it will run (`Jail.resolveEntry`):
   * a directory reached outside the workspace or through a dangling symlink is refused.
   */
  private async assertReachable(req: PreviewRequest, path: ToolPath): Promise<void> {
    if (isMemoryPath(path)) return;
    const p = resolveWorkspacePath(path, sessionWorkdir(req.arguments.workdir, req.working_directory));
    const jail = await this.workspaces.jail(req.actor.userId);
    const found = await jail.resolveEntry(p).catch((e: unknown) => {
      if (refusal(e)) throw e;
      return null;
    });
    if (found?.dangling) throw new DanglingSymlink(p.virtual);
  }

  /** The file as it is now: text (null when missing) and its hash; null when it cannot be previewed. */
  private async current(
    req: PreviewRequest,
    path: ToolPath,
  ): Promise<{ virtual: string; text: string | null; hash: string | null } | null> {
    if (isMemoryPath(path)) {
      if (!this.memory) return null;
      const ctx: ToolContext = {
        userId: req.actor.userId,
        role: req.actor.role,
        sessionId: req.session_id,
        toolCallId: req.tool_call_id,
        workdir: '/workspace',
        signal: new AbortController().signal,
      };
      const doc = await this.memory.current(ctx, path);
      this.memory.assertWritable(ctx, doc.path);
      return {
        virtual: doc.path.virtual,
        text: doc.content,
        hash: doc.content === null ? null : contentHash(doc.content),
      };
    }
    const p = resolveWorkspacePath(path, sessionWorkdir(req.arguments.workdir, req.working_directory));
    const jail = await this.workspaces.jail(req.actor.userId);
    let opened;
    try {
      opened = await jail.openRead(p);
    } catch (e) {
      if (refusal(e)) throw e;
      if (e instanceof ToolError && e.code === 'not_found') return { virtual: p.virtual, text: null, hash: null };
      return null;
    }
    try {
      if (opened.size > FILE_LIMITS.editMaxBytes) return null;
      const buf = Buffer.alloc(opened.size);
      let read = 0;
      while (read < buf.length) {
        const { bytesRead } = await opened.handle.read(buf, read, buf.length - read, read);
        if (bytesRead === 0) break;
        read += bytesRead;
      }
      const bytes = buf.subarray(0, read);
      if (looksBinary(bytes)) return null;
      return { virtual: p.virtual, text: bytes.toString('utf8'), hash: contentHash(bytes) };
    } finally {
      await opened.handle.close();
    }
  }
}
