import { posix } from 'node:path';
import { ToolError } from '../tool-error';

/** The workspace as the model sees it. */
export const WORKSPACE = '/workspace';

/** A path inside the user's workspace: how the model names it, and its segments below the root. */
export interface WorkspacePath {
  /** `/workspace/…`, for messages and `file_changed`. */
  readonly virtual: string;
  /** Segments below the workspace root; empty for the root itself. Never `.`, `..` or empty. */
  readonly segments: readonly string[];
}

const MEMORY_PATH = /^(user-memory|shared-memory)(\/|$)/;

/** `user-memory/…` and `shared-memory/…` are memory documents, never workspace files. */
export function isMemoryPath(path: string): boolean {
  return MEMORY_PATH.test(path);
}

/**
 * Resolves a path the model sent against the session's working directory, lexically. Relative paths
 * resolve against `workdir` (default `/workspace`); absolute ones must lie inside `/workspace`.
 * Anything else — a `..` escape, an absolute path outside, a NUL byte — is an error naming the path.
 * Symlinks are the jail's business (see `jail.ts`): this function never touches the disk.
 */
export function resolveWorkspacePath(path: string, workdir: string = WORKSPACE, field = 'path'): WorkspacePath {
  const base = resolveWorkdir(workdir);
  if (path.includes('\0'))
    throw new ToolError('invalid_argument', `${field} contains a NUL byte: ${JSON.stringify(path)}`);
  const joined = posix.isAbsolute(path) ? posix.normalize(path) : posix.join(base.virtual, path === '' ? '.' : path);
  return inside(joined, path, field);
}

/** Validates the session's working directory (an absolute path inside `/workspace`). */
export function resolveWorkdir(workdir: string): WorkspacePath {
  if (workdir.includes('\0'))
    throw new ToolError('invalid_argument', `workdir contains a NUL byte: ${JSON.stringify(workdir)}`);
  if (!posix.isAbsolute(workdir)) {
    throw new ToolError('invalid_argument', `workdir must be an absolute path inside ${WORKSPACE}: ${workdir}`);
  }
  return inside(posix.normalize(workdir), workdir, 'workdir');
}

function inside(normalized: string, original: string, field: string): WorkspacePath {
  const trimmed = normalized.length > 1 ? normalized.replace(/\/+$/, '') : normalized;
  if (trimmed !== WORKSPACE && !trimmed.startsWith(`${WORKSPACE}/`)) {
    throw new ToolError('outside_workspace', `${field} is outside the workspace (${WORKSPACE}): ${original}`);
  }
  const segments = trimmed === WORKSPACE ? [] : trimmed.slice(WORKSPACE.length + 1).split('/');
  return { virtual: trimmed, segments };
}

/** The workspace path of a child entry, for walks. */
export function childPath(parent: WorkspacePath, name: string): WorkspacePath {
  return { virtual: `${parent.virtual}/${name}`, segments: [...parent.segments, name] };
}
