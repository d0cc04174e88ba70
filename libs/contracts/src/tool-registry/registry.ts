/**
 * The built-in tools the tool runner executes, one `defineTool` file each. Every other list of
 * tools — what the worker offers, the runner's handlers and previews, the approval rules' groups
 * and categories, the metrics labels, the restart hints, the catalogue — is derived from this
 * array. Adding a tool: a new `<name>.tool.ts` here and one line below; the compiler then asks
 * for its handler (and, for a file write, its preview) in apps/tool-runner.
 */
import { appendFile } from './append-file.tool';
import type { ToolAccess, ToolCategory, ToolDefinition } from './define-tool';
import { deleteFile } from './delete-file.tool';
import { editFile } from './edit-file.tool';
import { executeCmd } from './execute-cmd.tool';
import { grepFiles } from './grep-files.tool';
import { insertAtLine } from './insert-at-line.tool';
import { listFiles } from './list-files.tool';
import { memorySearch } from './memory-search.tool';
import { openFile } from './open-file.tool';
import { readFile } from './read-file.tool';
import { replaceLines } from './replace-lines.tool';
import { searchFile } from './search-file.tool';
import { webFetch } from './web-fetch.tool';
import { webSearch } from './web-search.tool';
import { writeFile } from './write-file.tool';

export const BUILTIN_TOOLS = [
  listFiles,
  readFile,
  writeFile,
  editFile,
  insertAtLine,
  replaceLines,
  appendFile,
  deleteFile,
  searchFile,
  grepFiles,
  executeCmd,
  memorySearch,
  openFile,
  webFetch,
  webSearch,
] as const;

export type BuiltinToolDefinition = (typeof BUILTIN_TOOLS)[number];
export type BuiltinToolName = BuiltinToolDefinition['name'];
/** The tools that write the file named by their `path` (previewed as a diff for approval). */
export type FileWriteToolName = Extract<BuiltinToolDefinition, { access: 'write'; category: 'filesystem' }>['name'];
/** Kept for readers of the older name. */
export type BuiltinTool = ToolDefinition;

export const BUILTIN_TOOLS_BY_NAME: ReadonlyMap<string, BuiltinToolDefinition> = new Map(
  BUILTIN_TOOLS.map((t) => [t.name, t]),
);

/** One built-in tool's definition, typed by its name. */
export type BuiltinToolOf<N extends BuiltinToolName> = Extract<BuiltinToolDefinition, { name: N }>;

export function builtinTool<N extends BuiltinToolName>(name: N): BuiltinToolOf<N> {
  return BUILTIN_TOOLS_BY_NAME.get(name) as BuiltinToolOf<N>;
}

export function isBuiltinTool(name: string): name is BuiltinToolName {
  return BUILTIN_TOOLS_BY_NAME.has(name);
}

/** `@fs_read` of the tool patterns: the file tools that only read. */
export const FS_READ_TOOLS: readonly string[] = BUILTIN_TOOLS.filter(
  (t) => t.category === 'filesystem' && t.access === 'read',
).map((t) => t.name);
/** `@fs_write` of the tool patterns: the file tools that write. */
export const FS_WRITE_TOOLS: readonly string[] = BUILTIN_TOOLS.filter((t) => t.writesFile).map((t) => t.name);
/** Tools with path arguments (`toolPath`): files or directories the gate and the runner resolve. */
export const PATH_TOOLS: readonly string[] = BUILTIN_TOOLS.filter((t) => t.pathArgs.length > 0).map((t) => t.name);
/**
 * Path tools whose `path` names the entry they act on (a delete): the last component is never
 * followed through a symlink, so the path lands in the directory reached plus the name.
 */
export const ENTRY_PATH_TOOLS: readonly string[] = BUILTIN_TOOLS.filter((t) => t.pathNamesEntry).map((t) => t.name);

/** One of the tools the agent loop implements itself. */
export interface LoopToolDefinition {
  name: string;
  category: ToolCategory;
  /**
   * As a built-in tool's: `write` changes the workspace, memory or the world. The frame's own notes
   * (scratchpad, todos) and a question to the user change none of them; activating MCP servers
   * starts them, and a delegated agent may write.
   */
  access: ToolAccess;
  defaultRule: 'allow' | 'require';
}

/**
 * The tools the agent loop implements itself (libs/agent-loop `loop-tools.ts` defines what the
 * model sees; a test checks both name the same tools): their category, access and default rule.
 */
export const LOOP_TOOLS: readonly LoopToolDefinition[] = [
  { name: 'update_scratchpad', category: 'plumbing', access: 'read', defaultRule: 'allow' },
  { name: 'write_todos', category: 'plumbing', access: 'read', defaultRule: 'allow' },
  { name: 'ask_user_clarification', category: 'plumbing', access: 'read', defaultRule: 'allow' },
  { name: 'activate_tools', category: 'plumbing', access: 'write', defaultRule: 'allow' },
  { name: 'list_agents', category: 'plumbing', access: 'read', defaultRule: 'allow' },
  { name: 'execute_task', category: 'agents', access: 'write', defaultRule: 'require' },
  { name: 'execute_subtask', category: 'agents', access: 'write', defaultRule: 'require' },
];

/** Core interface tools injected by the system, never offered to a model. */
export const SYNTHETIC_TOOLS: ReadonlyArray<{ name: string; category: ToolCategory }> = [
  { name: 'task_completed', category: 'system' },
  { name: 'read_notification', category: 'system' },
  { name: 'restart', category: 'system' },
];

/** The category of any tool name: built-in, the loop's own, synthetic, MCP (`mcp__…`), else `dynamic`. */
export function toolCategory(name: string): ToolCategory {
  const known = BUILTIN_TOOLS_BY_NAME.get(name) ?? [...LOOP_TOOLS, ...SYNTHETIC_TOOLS].find((t) => t.name === name);
  if (known) return known.category;
  return name.startsWith('mcp__') ? 'mcp' : 'dynamic';
}
