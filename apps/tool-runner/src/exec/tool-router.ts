import { Injectable, Optional } from '@nestjs/common';
import { z } from 'zod';
import { BUILTIN_TOOLS_BY_NAME } from '@skald/contracts';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import {
  AppendFileArgs,
  EditFileArgs,
  ExecuteCmdArgs,
  GrepFilesArgs,
  InsertAtLineArgs,
  ListFilesArgs,
  parseArgs,
  ReadFileArgs,
  ReplaceLinesArgs,
  SearchFileArgs,
  WriteFileArgs,
} from '../files/file-tool-args';
import { FileToolsService } from '../files/file-tools.service';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { McpService } from '../mcp/mcp.service';
import { ToolError } from '../tool-error';
import { parseMemoryPath } from '../memory/memory-path';
import { isMemoryPath } from '../workspace/workspace-path';
import { ToolContext, ToolOutput } from './tool-context';

type Route = (ctx: ToolContext, args: Record<string, unknown>) => Promise<ToolOutput>;

export const MEMORY_UNAVAILABLE = 'memory documents are not available on this tool runner';
export const MemorySearchArgs = z.object({ query: z.string().min(1).max(4000) });

/**
 * Tool name → implementation. Each route parses the arguments with the tool's schema (an error
 * names the argument) and makes one call. A file tool whose `path` is `user-memory/…` or
 * `shared-memory/…` goes to the memory documents instead of the workspace.
 */
@Injectable()
export class ToolRouter {
  private readonly routes: ReadonlyMap<string, Route>;

  constructor(
    files: FileToolsService,
    commands: ExecuteCmdService,
    @Optional() memory?: MemoryToolsService,
    @Optional() private readonly mcp?: McpService,
  ) {
    const mem = (): MemoryToolsService => {
      if (!memory) throw new ToolError('unavailable', MEMORY_UNAVAILABLE);
      return memory;
    };
    /** Same tool, two homes: the memory documents for memory paths, the workspace otherwise. */
    const fileTool =
      <S extends z.ZodType<{ path: string }>>(
        name: string,
        schema: S,
        onFiles: (c: ToolContext, a: z.output<S>) => Promise<ToolOutput>,
        onMemory: (m: MemoryToolsService, c: ToolContext, a: z.output<S>) => Promise<ToolOutput>,
      ): Route =>
      (c, a) => {
        const args = parseArgs(name, schema, a);
        if (!isMemoryPath(args.path)) return onFiles(c, args);
        parseMemoryPath(args.path); // a memory path the resolver refuses is refused here, memory store or not
        return onMemory(mem(), c, args);
      };
    this.routes = new Map<string, Route>([
      [
        'list_files',
        fileTool(
          'list_files',
          ListFilesArgs,
          (c, a) => files.listFiles(c, a),
          (m, c, a) => m.listFiles(c, a),
        ),
      ],
      [
        'read_file',
        fileTool(
          'read_file',
          ReadFileArgs,
          (c, a) => files.readFile(c, a),
          (m, c, a) => m.readFile(c, a),
        ),
      ],
      [
        'write_file',
        fileTool(
          'write_file',
          WriteFileArgs,
          (c, a) => files.writeFile(c, a),
          (m, c, a) => m.writeFile(c, a),
        ),
      ],
      [
        'edit_file',
        fileTool(
          'edit_file',
          EditFileArgs,
          (c, a) => files.editFile(c, a),
          (m, c, a) => m.editFile(c, a),
        ),
      ],
      [
        'insert_at_line',
        fileTool(
          'insert_at_line',
          InsertAtLineArgs,
          (c, a) => files.insertAtLine(c, a),
          (m, c, a) => m.insertAtLine(c, a),
        ),
      ],
      [
        'replace_lines',
        fileTool(
          'replace_lines',
          ReplaceLinesArgs,
          (c, a) => files.replaceLines(c, a),
          (m, c, a) => m.replaceLines(c, a),
        ),
      ],
      [
        'append_file',
        fileTool(
          'append_file',
          AppendFileArgs,
          (c, a) => files.appendFile(c, a),
          (m, c, a) => m.appendFile(c, a),
        ),
      ],
      [
        'search_file',
        fileTool(
          'search_file',
          SearchFileArgs,
          (c, a) => files.searchFile(c, a),
          (m, c, a) => m.searchFile(c, a),
        ),
      ],
      [
        'grep_files',
        fileTool(
          'grep_files',
          GrepFilesArgs,
          (c, a) => files.grepFiles(c, a),
          () => {
            throw new ToolError(
              'invalid_argument',
              'grep_files searches the workspace; search memory documents with memory_search',
            );
          },
        ),
      ],
      ['execute_cmd', (c, a) => commands.execute(c, parseArgs('execute_cmd', ExecuteCmdArgs, a))],
      ['memory_search', (c, a) => mem().search(c, parseArgs('memory_search', MemorySearchArgs, a).query)],
    ]);
  }

  /** Names this runner executes. */
  get names(): string[] {
    return [...this.routes.keys()];
  }

  async route(name: string, ctx: ToolContext, args: Record<string, unknown>): Promise<ToolOutput> {
    const route = this.routes.get(name);
    if (route) return route(ctx, args);
    if (name.startsWith('mcp__')) {
      if (!this.mcp) throw new ToolError('unavailable', `MCP tools are not available on this tool runner (${name})`);
      return this.mcp.call(ctx, name, args);
    }
    throw new ToolError('invalid_argument', `unknown tool: ${name}`);
  }

  /** What recovery does with a call of this tool found started by a runner that died. */
  restartHint(name: string, userId: string): 'reExecute' | 'markInterrupted' {
    if (name === 'memory_search') return 'reExecute';
    if (name.startsWith('mcp__')) return this.mcp?.restartHint(userId, name) ?? 'markInterrupted';
    return BUILTIN_TOOLS_BY_NAME.get(name)?.restartHint ?? 'markInterrupted';
  }
}
