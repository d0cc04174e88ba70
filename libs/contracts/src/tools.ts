/**
 * The built-in tools the model is offered and the tool runner executes (PROTOCOL.md "Built-in
 * tools"): names, argument names and the JSON schema the model sees. Loop plumbing tools
 * (update_scratchpad, write_todos, ask_user_clarification, activate_tools, list_agents,
 * execute_task, execute_subtask) are defined by the agent loop itself.
 */
export interface BuiltinTool {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** Safe to run concurrently with the other calls of an all-safe batch. */
  concurrencySafe: boolean;
  /** What recovery does with a call found running after a crash. */
  restartHint: 'reExecute' | 'markInterrupted';
  /** Writes the file named by `path` (shown as a diff for approval, announced with `file_changed`). */
  writesFile: boolean;
}

const obj = (properties: Record<string, unknown>, required: string[]): Record<string, unknown> => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});
const str = (description: string) => ({ type: 'string', description });
const int = (description: string) => ({ type: 'integer', description });
const bool = (description: string) => ({ type: 'boolean', description });

/**
 * The regular-expression dialect of grep_files (RE2: linear-time matching), as the model is told it
 * in the tool's description and in the error for a pattern outside it.
 */
export const RE2_SYNTAX_NOTE =
  'Patterns use RE2 syntax (as in Go and ripgrep): no backreferences (\\1) and no lookaround ((?=…), (?!…), (?<=…), (?<!…)).';

export const BUILTIN_TOOLS: readonly BuiltinTool[] = [
  {
    name: 'list_files',
    description: 'List files and directories under a path of the workspace.',
    parameters: obj(
      {
        path: str('Directory (default: the working directory)'),
        depth: int('How deep to recurse (default 3)'),
        dirs_only: bool('Directories only'),
        detailed: bool('Include sizes and modification times'),
      },
      [],
    ),
    concurrencySafe: true,
    restartHint: 'reExecute',
    writesFile: false,
  },
  {
    name: 'read_file',
    description: 'Read a text file, with line numbers.',
    parameters: obj(
      {
        path: str('File to read'),
        start_line: int('First line (1-based)'),
        end_line: int('Last line (inclusive)'),
        limit: int('Maximum number of lines'),
      },
      ['path'],
    ),
    concurrencySafe: true,
    restartHint: 'reExecute',
    writesFile: false,
  },
  {
    name: 'write_file',
    description: 'Create or overwrite a file with the given content.',
    parameters: obj({ path: str('File to write'), content: str('The whole new content') }, ['path', 'content']),
    concurrencySafe: false,
    restartHint: 'reExecute',
    writesFile: true,
  },
  {
    name: 'edit_file',
    description: 'Replace text in a file. `old` must occur exactly once unless replace_all is set.',
    parameters: obj(
      {
        path: str('File to edit'),
        old: str('Exact text to replace'),
        new: str('Replacement text'),
        replace_all: bool('Replace every occurrence'),
      },
      ['path', 'old', 'new'],
    ),
    concurrencySafe: false,
    restartHint: 'reExecute',
    writesFile: true,
  },
  {
    name: 'insert_at_line',
    description: 'Insert content before or after a line (1-based).',
    parameters: obj(
      {
        path: str('File'),
        line: int('Line number (1-based)'),
        content: str('Text to insert'),
        position: { type: 'string', enum: ['before', 'after'], description: 'Default after' },
      },
      ['path', 'line', 'content'],
    ),
    concurrencySafe: false,
    restartHint: 'markInterrupted',
    writesFile: true,
  },
  {
    name: 'replace_lines',
    description: 'Replace a range of lines (1-based, inclusive).',
    parameters: obj(
      {
        path: str('File'),
        from_line: int('First line'),
        to_line: int('Last line (inclusive)'),
        new: str('Replacement text'),
      },
      ['path', 'from_line', 'to_line', 'new'],
    ),
    concurrencySafe: false,
    restartHint: 'markInterrupted',
    writesFile: true,
  },
  {
    name: 'append_file',
    description: 'Append content to the end of a file.',
    parameters: obj({ path: str('File'), content: str('Text to append') }, ['path', 'content']),
    concurrencySafe: false,
    restartHint: 'markInterrupted',
    writesFile: true,
  },
  {
    name: 'search_file',
    description: 'Search one file for a text, with context lines.',
    parameters: obj({ path: str('File'), query: str('Text to find'), context_lines: int('Lines of context') }, [
      'path',
      'query',
    ]),
    concurrencySafe: true,
    restartHint: 'reExecute',
    writesFile: false,
  },
  {
    name: 'grep_files',
    description: `Search files under a path for a regular expression. ${RE2_SYNTAX_NOTE}`,
    parameters: obj(
      {
        path: str('Directory or file'),
        pattern: str('Regular expression (RE2 syntax)'),
        case_sensitive: bool('Case sensitive (default true)'),
        glob: str('Only files matching this glob: * ? [abc] [!abc] {a,b} within a name, ** across directories'),
        output_mode: { type: 'string', enum: ['content', 'files_only', 'count'] },
        context_lines: int('0–10'),
        limit: int('Maximum results (default 100)'),
        offset: int('Skip this many results'),
      },
      ['path', 'pattern'],
    ),
    concurrencySafe: true,
    restartHint: 'reExecute',
    writesFile: false,
  },
  {
    name: 'execute_cmd',
    description: 'Run a shell command (sh -c) in the sandbox, in the working directory.',
    parameters: obj(
      {
        command: str('The command line'),
        workdir: str('Directory inside /workspace'),
        timeout: int('Seconds, 1–600 (default 120)'),
      },
      ['command'],
    ),
    concurrencySafe: false,
    restartHint: 'markInterrupted',
    writesFile: false,
  },
];

export const BUILTIN_TOOLS_BY_NAME: ReadonlyMap<string, BuiltinTool> = new Map(BUILTIN_TOOLS.map((t) => [t.name, t]));
