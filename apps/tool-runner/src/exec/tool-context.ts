import type { Logger } from '@skald/service-kit';
import type { Role } from '@skald/contracts';

/** What every tool implementation is handed about the call. */
export interface ToolContext {
  userId: string;
  /** The actor's role: shared memory is written only from an admin's session. */
  role: Role;
  sessionId: string;
  toolCallId: string;
  /** The session's working directory inside `/workspace` (the `workdir` argument), default `/workspace`. */
  workdir: string;
  /** Aborted by `tools.cancel.<toolCallId>` (or shutdown). */
  signal: AbortSignal;
  /** A write approved on a preview: the hash its file must still have (`tools.exec` `expected_base_hash`). */
  expectedBaseHash?: string;
  /**
   * Where the approval gate judged each path argument to land (`tools.exec` `judged_landing`, keyed
   * by the argument it came from): a file write lands exactly there or fails.
   */
  judgedLanding?: Readonly<Record<string, string | null>>;
  /**
   * The call's logger: its lines name the user, session, turn and call (`tools.exec` sets it; a tool
   * called without it logs with its service's own logger).
   */
  log?: Logger;
}

/** A finished call: the text the model reads, the workspace path a write changed, the one to show the user. */
export interface ToolOutput {
  result: string;
  /** The reply's `result_type` (default `text`; `image`: see `IMAGE_RESULT_TYPE`). */
  resultType?: string;
  fileChanged?: string;
  fileOpened?: string;
}

/** Thrown when a call stops because it was cancelled before it took effect. */
export class ToolCancelled extends Error {
  constructor() {
    super('cancelled');
    this.name = 'ToolCancelled';
  }
}
