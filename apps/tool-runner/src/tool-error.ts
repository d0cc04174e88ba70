/**
 * A tool call that ended in an error the model should read (`status: failed`). The message is the
 * whole sentence the model sees: it names the workspace path, never a host path.
 */
export type ToolErrorCode =
  | 'invalid_argument'
  | 'not_found'
  | 'outside_workspace'
  | 'forbidden'
  | 'not_a_file'
  | 'not_a_directory'
  | 'binary'
  | 'too_large'
  | 'quota_exceeded'
  | 'timed_out'
  | 'stopped'
  | 'unavailable'
  | 'io'
  /** The file changed since the preview the human approved: nothing was written (`status: stale`). */
  | 'stale';

export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}

/** A write approved on a preview whose file has changed since: answered `stale`, nothing written. */
export class StalePreview extends ToolError {
  constructor(virtual: string) {
    super('stale', `${virtual} changed since the preview that was approved; nothing was written`);
    this.name = 'StalePreview';
  }
}

/** A path through a symlink whose target does not exist: nothing can be read, and no write creates it. */
export class DanglingSymlink extends ToolError {
  constructor(virtual: string) {
    super('not_found', `${virtual} leads through a symlink whose target does not exist`);
    this.name = 'DanglingSymlink';
  }
}
