/** How a command ended. `output` is stdout and stderr interleaved, capped. */
export type CommandOutcome =
  | { kind: 'exited'; exitCode: number | null; signal: string | null; output: string }
  | { kind: 'timed_out'; output: string }
  | { kind: 'cancelled'; output: string }
  | { kind: 'stopped'; output: string };

export interface CommandRequest {
  /** Run by `sh -c`. */
  command: string;
  /** Host directory to run in (inside the user's workspace). */
  cwd: string;
  /** Host directory of the user's workspace (HOME). */
  home: string;
  timeoutSec: number;
  signal: AbortSignal;
  /** Live output (for `tool_progress`, wired later). */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
}

/**
 * The shell as an injectable adapter (STYLE.md): a test or another sandbox swaps it. Issue 6 adds a
 * bubblewrap implementation; `PlainCommandRunner` is the unsandboxed `SKALD_SANDBOX=none` one.
 */
export abstract class CommandRunner {
  abstract run(req: CommandRequest): Promise<CommandOutcome>;
  /** Kills every command still running (shutdown). */
  abstract stopAll(): void;
}
