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
  | 'io';

export class ToolError extends Error {
  constructor(
    readonly code: ToolErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'ToolError';
  }
}
