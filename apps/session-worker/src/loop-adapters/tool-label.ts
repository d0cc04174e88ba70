/** The short and full label of a call, and the workspace path it names: what `tool_start` and the chat history show. */
export interface ToolLabel {
  short: string;
  full: string;
  path?: string;
}

const COMMAND_SHORT = 60;

/** `$ <command>` for `execute_cmd`, `<tool> <path>` for a call naming a path, else the tool's name. */
export function toolLabel(name: string, args: unknown): ToolLabel {
  const a = args && typeof args === 'object' ? (args as Record<string, unknown>) : {};
  const path = typeof a.path === 'string' ? a.path : undefined;
  if (name === 'execute_cmd' && typeof a.command === 'string') {
    const cmd = a.command;
    return {
      short: `$ ${cmd.length > COMMAND_SHORT ? `${cmd.slice(0, COMMAND_SHORT - 3)}...` : cmd}`,
      full: `$ ${cmd}`,
    };
  }
  return { short: path ? `${name} ${path}` : name, full: path ? `${name} ${path}` : name, ...(path ? { path } : {}) };
}
