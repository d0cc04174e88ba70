import { effectiveCallPaths, parentDirectory, PATH_TOOLS, resolveToolPath, webDomainForm } from '@skald/contracts';
import type { GateInput } from './gate-input';
import { RULE_PATH_MAX_CHARS } from './rule-glob';

// The paths a call names, as the tool runner resolves them, and where they land: what path rules,
// the fast path and a narrow session approval judge.

export const WORKSPACE = '/workspace';
const MEMORY_ROOTS = ['user-memory', 'shared-memory'];

export function isMemoryPath(p: string): boolean {
  return MEMORY_ROOTS.some((root) => p === root || p.startsWith(`${root}/`));
}

/**
 * The lexically normalised path a path argument names, by the shared resolver the tool runner
 * uses (`@skald/contracts` tool-paths): memory paths stay relative (`user-memory/notes.md`),
 * everything else is absolute inside `/workspace`. Null for a path the runner refuses (outside the
 * workspace, a memory root climbed out of, NUL, longer than PATH_MAX): it matches no path rule.
 */
export function normalisePath(raw: string, workingDirectory: string = WORKSPACE): string | null {
  if (raw.length > RULE_PATH_MAX_CHARS) return null;
  const r = resolveToolPath(raw, {}, workingDirectory);
  return r.ok ? r.value.virtual : null;
}

/**
 * The effective paths of a call, exactly as the tool runner resolves them: file tools' `path`
 * against the `workdir` argument or the session's working directory, `execute_cmd`'s working
 * directory. Any other tool with a string `path` argument is judged by that path resolved the
 * same way; `web_fetch` is judged by its URL's domain form (`web:docs.python.org`). Null entries are
 * paths the runner refuses.
 */
export function callPaths(input: GateInput): Array<string | null> {
  // A fetched URL is judged by its domain form (`web:<host>`): the only host the runner contacts.
  if (input.toolName === 'web_fetch') return [webDomainForm(input.arguments.url)];
  const wd = input.runContext?.workingDirectory ?? null;
  const args = input.arguments;
  const known = PATH_TOOLS.includes(input.toolName) || input.toolName === 'execute_cmd';
  const resolved = known
    ? effectiveCallPaths(input.toolName, args, wd)
    : typeof args.path === 'string' && args.path.length > 0
      ? [resolveToolPath(args.path, args, wd)]
      : [];
  return resolved.map((r) => (r.ok ? r.value.virtual : null));
}

/** The file tools' targets (not `execute_cmd`'s directory): what path rules and the fast path judge. */
export function filePaths(input: GateInput): Array<string | null> {
  return input.toolName === 'execute_cmd' ? [] : callPaths(input);
}

/**
 * Where the paths of `callPaths` land (see `GateInput.landing`), one entry each, normalised like a
 * lexical path (null: unknown or refused). Null when the call is judged on its lexical paths alone:
 * no landing was given, or the tool's paths are not files the runner resolves (an MCP tool's `path`).
 */
export function landingPaths(input: GateInput): Array<string | null> | null {
  if (input.landing === undefined) return null;
  if (input.toolName !== 'execute_cmd' && !PATH_TOOLS.includes(input.toolName)) return null;
  const given = input.landing;
  return callPaths(input).map((lexical, i) => {
    // A memory document is a row, not a file: it lands where it is named.
    if (lexical !== null && isMemoryPath(lexical)) return lexical;
    const raw = given[i];
    return typeof raw === 'string' ? normalisePath(raw, WORKSPACE) : null;
  });
}

/** The landing of the file tools' targets (none for `execute_cmd`), or null: lexical alone. */
export function fileLandings(input: GateInput): Array<string | null> | null {
  return input.toolName === 'execute_cmd' ? null : landingPaths(input);
}

/** The directory a judged path lies in (as `parentDirectory` of the shared resolver). */
export function parentOf(virtual: string): string {
  const r = resolveToolPath(virtual, {}, WORKSPACE);
  return r.ok ? parentDirectory(r.value) : '';
}
