import {
  isMemoryPath as isMemoryPathShared,
  normalizeLexical,
  PathTarget,
  resolveCallBase,
  resolvePathAgainst,
  Resolved,
  type ToolPath,
  WORKSPACE_ROOT,
  WorkspaceTarget,
} from '@skald/contracts';
import { ToolError } from '../tool-error';

/** The workspace as the model sees it. */
export const WORKSPACE = WORKSPACE_ROOT;

/** A path inside the user's workspace: how the model names it, and its segments below the root. */
export interface WorkspacePath {
  /** `/workspace/…`, for messages and `file_changed`. */
  readonly virtual: string;
  /** Segments below the workspace root; empty for the root itself. Never `.`, `..` or empty. */
  readonly segments: readonly string[];
}

/**
 * Memory documents (`user-memory/…`, `shared-memory/…`, also `./user-memory/…`) are never
 * workspace files. The rule lives in the shared resolver (`@skald/contracts` tool-paths), which
 * the approval gate uses too: the gate judges exactly what this runner touches.
 */
export function isMemoryPath(path: string): boolean {
  return isMemoryPathShared(path);
}

/** The outcome of the shared resolver as a value, or the ToolError naming what is wrong. */
export function orThrow<T>(r: Resolved<T>): T {
  if (!r.ok) throw new ToolError(r.code, r.message);
  return r.value;
}

const toWorkspacePath = (t: WorkspaceTarget): WorkspacePath => ({ virtual: t.virtual, segments: t.segments });

/**
 * A path that is not a tool's argument but resolves the same way: where the gate judged a path
 * to land, the path of a REST upload or download. A tool's own path arguments are `ToolPath`s
 * from the registry's `toolPath` schema, so the gate has judged every one of them.
 */
export function nonToolPath(path: string): ToolPath {
  return path as ToolPath;
}

/**
 * Resolves a workspace path the model sent against the call's base directory (see the shared
 * resolver). A memory path here is an error: memory documents are routed elsewhere.
 */
export function resolveWorkspacePath(path: ToolPath, workdir: string = WORKSPACE, field = 'path'): WorkspacePath {
  const base = resolveWorkdir(workdir);
  const target: PathTarget = orThrow(resolvePathAgainst(path, { kind: 'workspace', ...base }, field));
  if (target.kind === 'memory')
    throw new ToolError('invalid_argument', `${path} is a memory document, not a workspace file`);
  return toWorkspacePath(target);
}

/** Validates an already resolved base directory (an absolute path inside `/workspace`). */
export function resolveWorkdir(workdir: string): WorkspacePath {
  if (workdir.includes('\0'))
    throw new ToolError('invalid_argument', `workdir contains a NUL byte: ${JSON.stringify(workdir)}`);
  if (!workdir.startsWith('/')) {
    throw new ToolError('invalid_argument', `workdir must be an absolute path inside ${WORKSPACE}: ${workdir}`);
  }
  const n = normalizeLexical(workdir);
  if (n !== WORKSPACE && !n.startsWith(`${WORKSPACE}/`))
    throw new ToolError('outside_workspace', `workdir is outside the workspace (${WORKSPACE}): ${workdir}`);
  return { virtual: n, segments: n === WORKSPACE ? [] : n.slice(WORKSPACE.length + 1).split('/') };
}

/**
 * A call's base directory from its `workdir` argument and the session's working directory — the
 * same function the gate applies.
 */
export function callBase(workdir: unknown, sessionWorkingDirectory: string | null | undefined): string {
  return orThrow(resolveCallBase(workdir, sessionWorkingDirectory)).virtual;
}

/** The workspace path of a child entry, for walks. */
export function childPath(parent: WorkspacePath, name: string): WorkspacePath {
  return { virtual: `${parent.virtual}/${name}`, segments: [...parent.segments, name] };
}
