import {
  BypassScope as BypassScopeSchema,
  effectiveCallPaths,
  parentDirectory,
  parseWebUrl,
  PATH_TOOLS,
  toolCategory,
} from '@skald/contracts';
import type { BypassScope, GateInput } from './gate-input';
import { landingPaths, parentOf } from './gate-paths';
import { parseInvocation } from './programs';
import { catalogueRisk, writesOrRuns } from './read-only-catalogue';
import { readCommandLine } from './shell-commands';

// A session bypass (a human's "approve for this session"): the narrow scopes a call opens, and
// whether a bypass covers a call. A tool's category (`toolCategory`) comes from the registry.

/** The one tool whose session approval is narrowed to a host. */
const WEB_FETCH = 'web_fetch';

/** `mcp__<server>__<tool>` → server. */
export function mcpServerOf(name: string): string | null {
  const m = /^mcp__(.+?)__./.exec(name);
  return m ? m[1] : null;
}

/**
 * What a narrow session approval of a command names: its program (argv[0] as written), its
 * subcommand (the first word that is neither an option nor an option's value, by the program
 * table: `git -C . status` → `status`), and its option shape (the set of its options' normalised
 * names, values left out: `sed -n 1p f` → [`-n`]; `--expression=x` → `--expression`, folded onto
 * `-e` where the table says). `ambiguous`: the subcommand word follows an option whose arity the
 * table does not know (an unknown program's `-x word`), so it may be that option's value.
 */
export function commandKey(argv: readonly string[]): {
  program: string;
  subcommand: string | null;
  options: string[];
  ambiguous: boolean;
} {
  const inv = parseInvocation(argv);
  return {
    program: argv[0] ?? '',
    subcommand: inv.positional[0] ?? null,
    options: [...new Set(inv.options.map((o) => o.name))].sort(),
    ambiguous: inv.positional.length > 0 && inv.ambiguous.has(0),
  };
}

/** Why no narrow session approval may name or cover this command, or null. */
function notNarrowable(argv: readonly string[]): string | null {
  const risk = catalogueRisk(argv);
  if (risk === 'writes' || risk === 'runs') return `${argv[0]}: ${writesOrRuns(argv) ?? risk}`;
  if (commandKey(argv).ambiguous) return `${argv[0]}: its subcommand may be an option's value`;
  return null;
}

/** At most this many option names in one scope (the wire schema's bound). */
const MAX_SCOPE_OPTIONS = 64;

/**
 * The narrow scopes a human's "approve for this session" opens for this call: `execute_cmd` →
 * this tool with each command's program, subcommand and option shape (`git status -s` →
 * {execute_cmd, git, status, options: ["-s"]}); a file tool → this tool in this file's directory;
 * `web_fetch` → this tool on this URL's host; any other tool → this tool. Empty when the call cannot be narrowed (a line the gate cannot
 * read, a command the read-only catalogue says writes or runs code, a subcommand that may be an
 * option's value, a path the runner refuses): then no session approval is offered.
 */
export function narrowScopes(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  workingDirectory: string | null | undefined,
): BypassScope[] {
  // Every scope must be a valid wire scope (the inbox lists them): a call with a word or a name
  // the schema refuses (over-long, empty, odd characters) offers no session approval at all.
  const scopes = deriveScopes(toolName, args, workingDirectory);
  return scopes.every((sc) => BypassScopeSchema.safeParse(sc).success) ? scopes : [];
}

function deriveScopes(
  toolName: string,
  args: Readonly<Record<string, unknown>>,
  workingDirectory: string | null | undefined,
): BypassScope[] {
  if (toolName === 'execute_cmd') {
    const line = readCommandLine(args.command);
    if (!line.readable) return [];
    const seen = new Map<string, { tool: string; program: string; subcommand: string | null; options: Set<string> }>();
    for (const c of line.commands) {
      if (notNarrowable(c.argv)) return [];
      const k = commandKey(c.argv);
      const key = JSON.stringify([k.program, k.subcommand]);
      const prev = seen.get(key);
      if (prev) for (const o of k.options) prev.options.add(o);
      else seen.set(key, { tool: toolName, program: k.program, subcommand: k.subcommand, options: new Set(k.options) });
    }
    const scopes = [...seen.values()].map((s) => ({ ...s, options: [...s.options].sort() }));
    return scopes.every((s) => s.options.length <= MAX_SCOPE_OPTIONS) ? scopes : [];
  }
  if (PATH_TOOLS.includes(toolName)) {
    const paths = effectiveCallPaths(toolName, args, workingDirectory);
    if (paths.length === 0 || !paths.every((p) => p.ok)) return [];
    const dirs = new Set(paths.map((p) => (p.ok ? parentDirectory(p.value) : '')));
    return [...dirs].map((directory) => ({ tool: toolName, directory }));
  }
  if (toolName === WEB_FETCH) {
    const url = parseWebUrl(args.url);
    return url ? [{ tool: toolName, host: url.hostname }] : [];
  }
  return [{ tool: toolName }];
}

/**
 * A narrow scope covers a call of its own tool: for `execute_cmd`, every command of the line has
 * the scope's program and subcommand, its options within the scope's option shape (a scope stored
 * before option shapes existed has none: it covers commands without options only), and is not one
 * the read-only catalogue says writes or runs code; for a file tool, every path's directory; for
 * `web_fetch`, the URL's host.
 */
function narrowCovers(scope: Extract<BypassScope, { tool: string }>, input: GateInput): boolean {
  if (scope.tool !== input.toolName) return false;
  if (input.toolName === 'execute_cmd') {
    if (scope.program === undefined) return false;
    const line = readCommandLine(input.arguments.command);
    if (!line.readable) return false;
    const shape = new Set(scope.options ?? []);
    return line.commands.every((c) => {
      if (notNarrowable(c.argv)) return false;
      const k = commandKey(c.argv);
      return (
        k.program === scope.program &&
        k.subcommand === (scope.subcommand ?? null) &&
        k.options.every((o) => shape.has(o))
      );
    });
  }
  if (PATH_TOOLS.includes(input.toolName)) {
    if (scope.directory === undefined) return false;
    const paths = effectiveCallPaths(input.toolName, input.arguments, input.runContext?.workingDirectory);
    // The directory the human approved, where the call is written and where it lands.
    const landing = landingPaths(input);
    return (
      paths.length > 0 &&
      paths.every((p) => p.ok && parentDirectory(p.value) === scope.directory) &&
      (landing === null || landing.every((l) => l !== null && parentOf(l) === scope.directory))
    );
  }
  if (input.toolName === WEB_FETCH) {
    // the host the human approved is the host the runner contacts (the same parser); another
    // host, a subdomain included, asks again
    return scope.host !== undefined && parseWebUrl(input.arguments.url)?.hostname === scope.host;
  }
  return scope.program === undefined && scope.directory === undefined && scope.host === undefined;
}

/**
 * Whether a session bypass covers a call. A shell line the gate cannot read (see
 * `readCommandLine`) is covered by none, not even `all`.
 */
export function bypassCovers(scope: BypassScope, input: GateInput): boolean {
  if (input.toolName === 'execute_cmd' && !readCommandLine(input.arguments.command).readable) return false;
  if (scope === 'all') return true;
  if ('category' in scope) return scope.category.toLowerCase() === toolCategory(input.toolName);
  if ('mcp_server' in scope) return mcpServerOf(input.toolName) === scope.mcp_server;
  return narrowCovers(scope, input);
}
