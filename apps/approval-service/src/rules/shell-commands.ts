import { parseShell, unallowableReason } from './shell-parser';

/**
 * The one place the session-approval code reads a shell line: the commands of a line as argv, and
 * whether the gate could read the line well enough for a human's session approval to apply at
 * all. A line that does not parse, that is empty, or that has a command which runs other commands
 * (wrappers, `sh -c`, expansions that can run code) is never covered by a bypass.
 */
export type CommandLine =
  { readable: true; commands: ReadonlyArray<{ argv: readonly string[] }> } | { readable: false; reason: string };

export function readCommandLine(line: unknown): CommandLine {
  if (typeof line !== 'string') return { readable: false, reason: 'no command' };
  const parsed = parseShell(line);
  if (!parsed.ok) return { readable: false, reason: parsed.reason };
  if (parsed.commands.length === 0) return { readable: false, reason: 'empty command line' };
  for (const cmd of parsed.commands) {
    if (cmd.argv.length === 0) return { readable: false, reason: 'a command without a name' };
    const why = unallowableReason(cmd);
    if (why) return { readable: false, reason: why };
    if (cmd.expanded.some(Boolean)) return { readable: false, reason: `${cmd.argv[0]}: a word is an expansion` };
  }
  return { readable: true, commands: parsed.commands.map((c) => ({ argv: c.argv })) };
}
