import { Injectable, Optional } from '@nestjs/common';
import { z } from 'zod';
import {
  BUILTIN_TOOLS,
  BUILTIN_TOOLS_BY_NAME,
  builtinTool,
  isBuiltinTool,
  type BuiltinToolName,
  type BuiltinToolOf,
  type ToolPath,
} from '@skald/contracts';
import { ExecuteCmdService } from '../command/execute-cmd.service';
import { parseArgs } from '../files/file-tool-args';
import { FileToolsService } from '../files/file-tools.service';
import { MemoryToolsService } from '../memory/memory-tools.service';
import { McpService } from '../mcp/mcp.service';
import { ToolError } from '../tool-error';
import { parseMemoryPath } from '../memory/memory-path';
import { isMemoryPath } from '../workspace/workspace-path';
import { WebToolsService } from '../web/web-tools.service';
import { ToolContext, ToolOutput } from './tool-context';

/** A built-in tool's implementation: its arguments already parsed with the registry's schema. */
export type ToolHandler<N extends BuiltinToolName> = (
  ctx: ToolContext,
  args: z.output<BuiltinToolOf<N>['args']>,
) => Promise<ToolOutput>;

/** One handler per registry entry: a tool without one does not compile. */
export type ToolHandlers = { readonly [N in BuiltinToolName]: ToolHandler<N> };

export const MEMORY_UNAVAILABLE = 'memory documents are not available on this tool runner';

/**
 * Tool name → implementation. Each call's arguments are parsed with the tool's registry schema
 * (an error names the argument) and handed to its handler. A file tool whose `path` is
 * `user-memory/…` or `shared-memory/…` goes to the memory documents instead of the workspace.
 */
@Injectable()
export class ToolRouter {
  private readonly handlers: ToolHandlers;

  constructor(
    files: FileToolsService,
    commands: ExecuteCmdService,
    @Optional() memory?: MemoryToolsService,
    @Optional() private readonly mcp?: McpService,
    @Optional() private readonly web?: WebToolsService,
  ) {
    const mem = (): MemoryToolsService => {
      if (!memory) throw new ToolError('unavailable', MEMORY_UNAVAILABLE);
      return memory;
    };
    const webTools = (): WebToolsService => {
      if (!web) throw new ToolError('unavailable', 'the web tools are not available on this tool runner');
      return web;
    };
    /**
     * Same tool, two homes: the memory documents when its path arguments name memory documents,
     * the workspace when they name workspace files; one of each is refused.
     */
    const fileTool =
      <N extends BuiltinToolName, A extends z.output<BuiltinToolOf<N>['args']>>(
        name: N,
        onFiles: (c: ToolContext, a: A) => Promise<ToolOutput>,
        onMemory: (m: MemoryToolsService, c: ToolContext, a: A) => Promise<ToolOutput>,
      ) =>
      (c: ToolContext, args: A): Promise<ToolOutput> => {
        const paths = pathArguments(name, args);
        const memoryPaths = paths.filter((p) => isMemoryPath(p.value));
        if (memoryPaths.length === 0) return onFiles(c, args);
        if (memoryPaths.length < paths.length) {
          throw new ToolError(
            'invalid_argument',
            `${name}: ${paths.map((p) => p.name).join(' and ')} must all name workspace files or all memory documents`,
          );
        }
        // A memory path the resolver refuses is refused here, memory store or not.
        for (const p of memoryPaths) parseMemoryPath(p.value);
        return onMemory(mem(), c, args);
      };
    this.handlers = {
      list_files: fileTool(
        'list_files',
        (c, a) => files.listFiles(c, a),
        (m, c, a) => m.listFiles(c, a),
      ),
      read_file: fileTool(
        'read_file',
        (c, a) => files.readFile(c, a),
        (m, c, a) => m.readFile(c, a),
      ),
      write_file: fileTool(
        'write_file',
        (c, a) => files.writeFile(c, a),
        (m, c, a) => m.writeFile(c, a),
      ),
      edit_file: fileTool(
        'edit_file',
        (c, a) => files.editFile(c, a),
        (m, c, a) => m.editFile(c, a),
      ),
      insert_at_line: fileTool(
        'insert_at_line',
        (c, a) => files.insertAtLine(c, a),
        (m, c, a) => m.insertAtLine(c, a),
      ),
      replace_lines: fileTool(
        'replace_lines',
        (c, a) => files.replaceLines(c, a),
        (m, c, a) => m.replaceLines(c, a),
      ),
      append_file: fileTool(
        'append_file',
        (c, a) => files.appendFile(c, a),
        (m, c, a) => m.appendFile(c, a),
      ),
      // Memory documents are refused whether or not this runner has the memory store.
      delete_file: (c, a) => {
        const memoryPaths = pathArguments('delete_file', a).filter((p) => isMemoryPath(p.value));
        if (memoryPaths.length === 0) return files.deleteFile(c, a);
        for (const p of memoryPaths) parseMemoryPath(p.value);
        throw new ToolError(
          'invalid_argument',
          'delete_file deletes workspace files; memory documents are not deleted by it (they do not count ' +
            'against the workspace quota): overwrite the document with write_file instead',
        );
      },
      search_file: fileTool(
        'search_file',
        (c, a) => files.searchFile(c, a),
        (m, c, a) => m.searchFile(c, a),
      ),
      grep_files: fileTool(
        'grep_files',
        (c, a) => files.grepFiles(c, a),
        () => {
          throw new ToolError(
            'invalid_argument',
            'grep_files searches the workspace; search memory documents with memory_search',
          );
        },
      ),
      execute_cmd: (c, a) => commands.execute(c, a),
      memory_search: (c, a) => mem().search(c, a.query),
      web_fetch: (c, a) => webTools().fetch(c, a),
      web_search: (c, a) => webTools().search(c, a),
      open_file: fileTool(
        'open_file',
        (c, a) => files.openFile(c, a),
        () => {
          throw new ToolError(
            'invalid_argument',
            'open_file shows workspace files; read memory documents with read_file',
          );
        },
      ),
    };
  }

  /** Built-in names this runner executes: every registry entry, in registry order. */
  get names(): string[] {
    return BUILTIN_TOOLS.map((t) => t.name).filter((n) => Object.hasOwn(this.handlers, n));
  }

  /** Built-in tools this runner would refuse for want of configuration: not offered to the model. */
  get unavailable(): string[] {
    return this.web?.searchOffered ? [] : ['web_search'];
  }

  async route(name: string, ctx: ToolContext, args: Record<string, unknown>): Promise<ToolOutput> {
    if (isBuiltinTool(name)) return this.run(name, ctx, args);
    if (name.startsWith('mcp__')) {
      if (!this.mcp) throw new ToolError('unavailable', `MCP tools are not available on this tool runner (${name})`);
      return this.mcp.call(ctx, name, args);
    }
    throw new ToolError('invalid_argument', `unknown tool: ${name}`);
  }

  private run<N extends BuiltinToolName>(
    name: N,
    ctx: ToolContext,
    args: Record<string, unknown>,
  ): Promise<ToolOutput> {
    const handler = this.handlers[name] as ToolHandler<N>;
    return handler(ctx, parseArgs(name, builtinTool(name).args, args) as z.output<BuiltinToolOf<N>['args']>);
  }

  /** What recovery does with a call of this tool found started by a runner that died. */
  restartHint(name: string, userId: string): 'reExecute' | 'markInterrupted' {
    if (name.startsWith('mcp__')) return this.mcp?.restartHint(userId, name) ?? 'markInterrupted';
    return BUILTIN_TOOLS_BY_NAME.get(name)?.restartHint ?? 'markInterrupted';
  }
}

/** A parsed call's path arguments (the registry's `toolPath`s) that it gave. */
function pathArguments<N extends BuiltinToolName>(
  name: N,
  args: z.output<BuiltinToolOf<N>['args']>,
): Array<{ name: string; value: ToolPath }> {
  const given = args as Readonly<Record<string, ToolPath | undefined>>;
  return builtinTool(name).pathArgs.flatMap((a) => {
    const value = given[a.name];
    return value === undefined ? [] : [{ name: a.name, value }];
  });
}
