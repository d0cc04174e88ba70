/**
 * The one path resolver of a tool call, imported by the approval service (to judge a call) and
 * the tool runner (to run it): the gate judges exactly the path the runner touches.
 *
 * Rules, all lexical (the disk is never read; symlinks are the runner's jail's business):
 * - The model sees the user's workspace as `/workspace`.
 * - The base of a call is its `workdir` argument when it has one (absolute inside the workspace,
 *   or relative to the session's working directory), else the session's working directory
 *   (RunContext), else `/workspace`.
 * - A relative path whose lexical normal form starts with `user-memory` or `shared-memory` is a
 *   memory document (`./user-memory/x`, `a/../user-memory/x` and `user-memory/x` are the same
 *   document); it is never resolved against the base. A path that starts in a memory root and
 *   climbs out of it (`user-memory/../x`) is an error.
 * - Any other relative path resolves against the base; an absolute path must lie inside
 *   `/workspace`. A NUL byte, a path outside the workspace, or a memory key over
 *   `MEMORY_KEY_MAX` characters is an error naming the path.
 *
 * Pure: no `node:path`, so browser bundles that import contracts still build.
 */

import type { ToolDefinition } from './tool-registry/define-tool';
import { BUILTIN_TOOLS_BY_NAME } from './tool-registry/registry';

export const WORKSPACE_ROOT = '/workspace';
export const MEMORY_KEY_MAX = 512;
export type MemoryScope = 'user' | 'shared';
export const MEMORY_ROOT: Readonly<Record<MemoryScope, string>> = { user: 'user-memory', shared: 'shared-memory' };

export interface WorkspaceTarget {
  readonly kind: 'workspace';
  /** `/workspace/…`, normalised, no trailing slash. */
  readonly virtual: string;
  /** Segments below the workspace root; empty for the root itself. Never `.`, `..` or empty. */
  readonly segments: readonly string[];
}
export interface MemoryTarget {
  readonly kind: 'memory';
  readonly scope: MemoryScope;
  /** Normalised key below the scope's root; '' for the root itself. */
  readonly key: string;
  /** `user-memory/<key>` (or the bare root). */
  readonly virtual: string;
}
export type PathTarget = WorkspaceTarget | MemoryTarget;

export type PathErrorCode = 'invalid_argument' | 'outside_workspace';
export type Resolved<T> = { ok: true; value: T } | { ok: false; code: PathErrorCode; message: string };

const fail = (code: PathErrorCode, message: string): { ok: false; code: PathErrorCode; message: string } => ({
  ok: false,
  code,
  message,
});

/** POSIX lexical normalisation: `.`, `..` and repeated slashes; never above `/`; `.` for an empty relative path. */
export function normalizeLexical(path: string): string {
  const absolute = path.startsWith('/');
  const out: string[] = [];
  for (const part of path.split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      if (out.length > 0 && out[out.length - 1] !== '..') out.pop();
      else if (!absolute) out.push('..');
      continue;
    }
    out.push(part);
  }
  const joined = out.join('/');
  return absolute ? `/${joined}` : joined || '.';
}

function memoryScopeOf(firstSegment: string | undefined): MemoryScope | null {
  if (firstSegment === MEMORY_ROOT.user) return 'user';
  if (firstSegment === MEMORY_ROOT.shared) return 'shared';
  return null;
}

/** True when the path names a memory document (see the rules above); false for errors too. */
export function isMemoryPath(path: string): boolean {
  if (path.startsWith('/') || path.includes('\0')) return false;
  const first = path.split('/').find((s) => s !== '' && s !== '.');
  return memoryScopeOf(first) !== null || memoryScopeOf(normalizeLexical(path).split('/')[0]) !== null;
}

function workspaceTarget(normalized: string, original: string, field: string): Resolved<WorkspaceTarget> {
  if (normalized !== WORKSPACE_ROOT && !normalized.startsWith(`${WORKSPACE_ROOT}/`))
    return fail('outside_workspace', `${field} is outside the workspace (${WORKSPACE_ROOT}): ${original}`);
  const segments = normalized === WORKSPACE_ROOT ? [] : normalized.slice(WORKSPACE_ROOT.length + 1).split('/');
  return { ok: true, value: { kind: 'workspace', virtual: normalized, segments } };
}

/** The session's working directory (RunContext): absolute inside the workspace, or relative to it; absent → `/workspace`. */
export function resolveSessionDirectory(workingDirectory: string | null | undefined): Resolved<WorkspaceTarget> {
  if (workingDirectory === undefined || workingDirectory === null || workingDirectory === '')
    return workspaceTarget(WORKSPACE_ROOT, WORKSPACE_ROOT, 'working directory');
  if (workingDirectory.includes('\0'))
    return fail('invalid_argument', `working directory contains a NUL byte: ${JSON.stringify(workingDirectory)}`);
  const joined = workingDirectory.startsWith('/') ? workingDirectory : `${WORKSPACE_ROOT}/${workingDirectory}`;
  return workspaceTarget(normalizeLexical(joined), workingDirectory, 'working directory');
}

/**
 * The directory a call's relative paths resolve against (and where `execute_cmd` runs): the
 * `workdir` argument (absolute, or relative to the session's working directory), else the
 * session's working directory.
 */
export function resolveCallBase(
  workdir: unknown,
  sessionWorkingDirectory: string | null | undefined,
): Resolved<WorkspaceTarget> {
  const session = resolveSessionDirectory(sessionWorkingDirectory);
  if (!session.ok) return session;
  if (workdir === undefined || workdir === null || workdir === '') return session;
  if (typeof workdir !== 'string') return fail('invalid_argument', 'workdir must be a string');
  if (workdir.includes('\0'))
    return fail('invalid_argument', `workdir contains a NUL byte: ${JSON.stringify(workdir)}`);
  if (isMemoryPath(workdir)) return fail('invalid_argument', `workdir is a memory path, not a directory: ${workdir}`);
  const joined = workdir.startsWith('/') ? workdir : `${session.value.virtual}/${workdir}`;
  return workspaceTarget(normalizeLexical(joined), workdir, 'workdir');
}

/** A path argument against an already resolved base. */
export function resolvePathAgainst(path: string, base: WorkspaceTarget, field = 'path'): Resolved<PathTarget> {
  if (path.includes('\0')) return fail('invalid_argument', `${field} contains a NUL byte: ${JSON.stringify(path)}`);
  if (path.startsWith('/')) return workspaceTarget(normalizeLexical(path), path, field);
  const normalized = normalizeLexical(path);
  const segments = normalized.split('/');
  const first = path.split('/').find((s) => s !== '' && s !== '.');
  const startsIn = memoryScopeOf(first);
  const endsIn = memoryScopeOf(segments[0]);
  if (startsIn !== null && endsIn !== startsIn)
    return fail('outside_workspace', `${field} escapes ${MEMORY_ROOT[startsIn]}/: ${path}`);
  if (endsIn !== null) {
    const key = segments.slice(1).join('/');
    if (key.length > MEMORY_KEY_MAX)
      return fail('invalid_argument', `memory path too long (over ${MEMORY_KEY_MAX} characters): ${path}`);
    const root = MEMORY_ROOT[endsIn];
    return { ok: true, value: { kind: 'memory', scope: endsIn, key, virtual: key === '' ? root : `${root}/${key}` } };
  }
  const joined = normalized === '.' ? base.virtual : normalizeLexical(`${base.virtual}/${normalized}`);
  return workspaceTarget(joined, path, field);
}

/** One path argument of a call, from the call's arguments and the session's working directory. */
export function resolveToolPath(
  path: string,
  args: { workdir?: unknown },
  sessionWorkingDirectory: string | null | undefined,
): Resolved<PathTarget> {
  const base = resolveCallBase(args.workdir, sessionWorkingDirectory);
  return base.ok ? resolvePathAgainst(path, base.value) : base;
}

/**
 * What a call touches on disk or in memory: each of a built-in tool's path arguments (`toolPath`,
 * in the schema's order; one with a default, as `list_files`' `path`, works on the base without a
 * value) and, for `execute_cmd`, the directory it runs in. Other tools touch nothing this resolver
 * knows of (an empty list).
 */
export function effectiveCallPaths(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  sessionWorkingDirectory: string | null | undefined,
): Array<Resolved<PathTarget>> {
  return callPathEntries(toolName, args, sessionWorkingDirectory).map((e) => e.target);
}

/** The argument each of `effectiveCallPaths`' entries comes from, in the same order (`workdir` for `execute_cmd`). */
export function effectiveCallPathArgs(toolName: string, args: Readonly<Record<string, unknown>>): string[] {
  return callPathEntries(toolName, args, null).map((e) => e.arg);
}

function callPathEntries(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  sessionWorkingDirectory: string | null | undefined,
): Array<{ arg: string; target: Resolved<PathTarget> }> {
  if (toolName === 'execute_cmd')
    return [{ arg: 'workdir', target: resolveCallBase(args.workdir, sessionWorkingDirectory) }];
  const tool = BUILTIN_TOOLS_BY_NAME.get(toolName);
  return tool ? toolCallPaths(tool, args, sessionWorkingDirectory) : [];
}

/** A tool's path arguments (`toolPath`, its schema's order) as a call gives them, resolved. */
export function toolCallPaths(
  tool: Pick<ToolDefinition, 'pathArgs'>,
  args: Readonly<Record<string, unknown>>,
  sessionWorkingDirectory: string | null | undefined,
): Array<{ arg: string; target: Resolved<PathTarget> }> {
  const out: Array<{ arg: string; target: Resolved<PathTarget> }> = [];
  for (const { name: arg, defaultsToBase } of tool.pathArgs) {
    const raw = args[arg];
    if (raw === undefined || raw === null || raw === '') {
      if (raw === undefined && !defaultsToBase) continue;
      out.push({ arg, target: resolveCallBase(args.workdir, sessionWorkingDirectory) });
    } else if (typeof raw !== 'string') out.push({ arg, target: fail('invalid_argument', `${arg} must be a string`) });
    else out.push({ arg, target: resolveToolPath(raw, args, sessionWorkingDirectory) });
  }
  return out;
}

/** The directory a file-tool path lies in (memory: its parent key), for narrow session approvals. */
export function parentDirectory(target: PathTarget): string {
  const v = target.virtual;
  const i = v.lastIndexOf('/');
  if (target.kind === 'memory') return i < 0 ? v : v.slice(0, i);
  return i <= 0 ? WORKSPACE_ROOT : v.slice(0, i) || WORKSPACE_ROOT;
}
