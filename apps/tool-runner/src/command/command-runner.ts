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
  /** The same directory as the command sees it (`/workspace/…`). */
  virtualCwd: string;
  /** Host directory of the user's workspace (HOME; bound at `/workspace` in a sandbox). */
  home: string;
  timeoutSec: number;
  signal: AbortSignal;
  /** Largest file the command may write, in bytes (what is left of the workspace quota). */
  maxFileBytes?: number;
  /** Live output (`tool_progress`). */
  onOutput?: (stream: 'stdout' | 'stderr', chunk: Buffer) => void;
}

/** Whether commands can run, and a line for `/readyz` and the start-up log. */
export interface SandboxStatus {
  available: boolean;
  /** `bwrap` or `none`. */
  kind: 'bwrap' | 'none';
  summary: string;
}

/**
 * The shell as an injectable adapter (STYLE.md): a test or another sandbox swaps it.
 * `BwrapCommandRunner` is the bubblewrap sandbox; `PlainCommandRunner` the unsandboxed
 * `SKALD_SANDBOX=none` one.
 */
export abstract class CommandRunner {
  /** Prepares the runner (a sandbox self-test); memoised, never throws. */
  abstract init(): Promise<SandboxStatus>;
  abstract run(req: CommandRequest): Promise<CommandOutcome>;
  /** Kills every command still running (shutdown). */
  abstract stopAll(): void;
}
