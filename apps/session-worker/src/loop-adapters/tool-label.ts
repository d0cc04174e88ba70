/** The short and full label of a call, and the workspace path it names: what `tool_start` and the chat history show. */
export interface ToolLabel {
  short: string;
  full: string;
  path?: string;
}

const COMMAND_SHORT = 60;

const clip = (s: string): string => (s.length > COMMAND_SHORT ? `${s.slice(0, COMMAND_SHORT - 3)}...` : s);

/**
 * `$ <command>` for `execute_cmd`, `web_fetch <url>` and `web_search "<query>"` for the web tools,
 * `<tool> <path>` for a call naming a path, else the tool's name.
 */
export function toolLabel(name: string, args: unknown): ToolLabel {
  const a = args && typeof args === 'object' ? (args as Record<string, unknown>) : {};
  if (name === 'web_fetch' && typeof a.url === 'string')
    return { short: clip(`web_fetch ${a.url}`), full: `web_fetch ${a.url}` };
  if (name === 'web_search' && typeof a.query === 'string')
    return { short: clip(`web_search "${a.query}"`), full: `web_search "${a.query}"` };
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
