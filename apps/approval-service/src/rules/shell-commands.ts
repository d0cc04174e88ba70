import { unallowableReason } from './command-match';
import { analyzeCommand } from './shell-analysis';

/**
 * The one place the session-approval code reads a shell line: the commands of a line as argv, and
 * whether the gate could read the line well enough for a human's session approval to apply at
 * all. A line the shell analysis cannot read as simple commands of literal words (it needs a
 * human), or that has a command which runs other commands (wrappers, `sh -c`, `find -exec`), an
 * assignment prefix or a writing redirection, is never covered by a bypass.
 */
export type CommandLine =
  { readable: true; commands: ReadonlyArray<{ argv: readonly string[] }> } | { readable: false; reason: string };

export function readCommandLine(line: unknown): CommandLine {
  if (typeof line !== 'string') return { readable: false, reason: 'no command' };
  const analysis = analyzeCommand(line);
  if (analysis.kind === 'needs_human') return { readable: false, reason: analysis.reason };
  if (analysis.commands.length === 0) return { readable: false, reason: 'empty command line' };
  for (const cmd of analysis.commands) {
    if (cmd.argv.length === 0) return { readable: false, reason: 'a command without a name' };
    const why = unallowableReason(cmd);
    if (why) return { readable: false, reason: why };
  }
  return { readable: true, commands: analysis.commands.map((c) => ({ argv: c.argv })) };
}
