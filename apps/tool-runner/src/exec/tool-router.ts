import { Injectable } from '@nestjs/common';
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
import { ToolError } from '../tool-error';
import { ToolContext, ToolOutput } from './tool-context';

type Route = (ctx: ToolContext, args: Record<string, unknown>) => Promise<ToolOutput>;

export const MEMORY_UNAVAILABLE = 'memory documents are not available yet';

/**
 * Tool name → implementation. Each route parses the arguments with the tool's schema (an error
 * names the argument) and makes one call. Names the runner does not serve yet answer a clear error.
 */
@Injectable()
export class ToolRouter {
  private readonly routes: ReadonlyMap<string, Route>;

  constructor(files: FileToolsService, commands: ExecuteCmdService) {
    this.routes = new Map<string, Route>([
      ['list_files', (c, a) => files.listFiles(c, parseArgs('list_files', ListFilesArgs, a))],
      ['read_file', (c, a) => files.readFile(c, parseArgs('read_file', ReadFileArgs, a))],
      ['write_file', (c, a) => files.writeFile(c, parseArgs('write_file', WriteFileArgs, a))],
      ['edit_file', (c, a) => files.editFile(c, parseArgs('edit_file', EditFileArgs, a))],
      ['insert_at_line', (c, a) => files.insertAtLine(c, parseArgs('insert_at_line', InsertAtLineArgs, a))],
      ['replace_lines', (c, a) => files.replaceLines(c, parseArgs('replace_lines', ReplaceLinesArgs, a))],
      ['append_file', (c, a) => files.appendFile(c, parseArgs('append_file', AppendFileArgs, a))],
      ['search_file', (c, a) => files.searchFile(c, parseArgs('search_file', SearchFileArgs, a))],
      ['grep_files', (c, a) => files.grepFiles(c, parseArgs('grep_files', GrepFilesArgs, a))],
      ['execute_cmd', (c, a) => commands.execute(c, parseArgs('execute_cmd', ExecuteCmdArgs, a))],
    ]);
  }

  /** Names this runner executes. */
  get names(): string[] {
    return [...this.routes.keys()];
  }

  async route(name: string, ctx: ToolContext, args: Record<string, unknown>): Promise<ToolOutput> {
    const route = this.routes.get(name);
    if (route) return route(ctx, args);
    if (name === 'memory_search') throw new ToolError('unavailable', `${MEMORY_UNAVAILABLE} (memory_search)`);
    if (name.startsWith('mcp__'))
      throw new ToolError('unavailable', `MCP tools are not available on this tool runner yet (${name})`);
    throw new ToolError('invalid_argument', `unknown tool: ${name}`);
  }
}
