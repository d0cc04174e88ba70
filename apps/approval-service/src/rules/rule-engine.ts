import { posix } from 'node:path';

export type RuleAction = 'allow' | 'deny' | 'require';

export interface Rule {
  id: string;
  toolPattern: string;
  pathPattern: string | null;
  commandPattern: string | null;
  agentId: string | null;
  source: string | null;
  securityGroup: string | null;
  action: RuleAction;
  priority: number;
  /** Insertion order: ties on priority are broken by it. */
  ord: number;
}

export interface GateCall {
  toolName: string;
  arguments: Record<string, unknown>;
  agentId: string;
  source: string;
  securityGroup?: string;
  /** The session's working directory inside /workspace (default `/workspace`). */
  workingDirectory?: string;
}

export interface Decision {
  decision: RuleAction;
  ruleId?: string;
  reason: string;
}

export const FS_READ_TOOLS = ['list_files', 'read_file', 'search_file', 'grep_files', 'memory_search'];
export const FS_WRITE_TOOLS = ['write_file', 'edit_file', 'insert_at_line', 'replace_lines', 'append_file'];
const MEMORY_PREFIXES = ['user-memory/', 'shared-memory/'];
const WORKSPACE = '/workspace';

/** Does the tool name match the rule's `tool_pattern`? */
export function matchesTool(pattern: string, tool: string): boolean {
  if (pattern === '*') return true;
  if (pattern === '@fs_read') return FS_READ_TOOLS.includes(tool);
  if (pattern === '@fs_write') return FS_WRITE_TOOLS.includes(tool);
  if (pattern === '@fs_any') return FS_READ_TOOLS.includes(tool) || FS_WRITE_TOOLS.includes(tool);
  if (pattern.endsWith('*')) return tool.startsWith(pattern.slice(0, -1));
  return pattern === tool;
}

/**
 * The lexically normalised path a call's `path` argument names: memory paths stay relative
 * (`user-memory/notes.md`), everything else becomes absolute under the working directory.
 * Symlinks are not followed here: the tool runner's jail is what stops an escape.
 */
export function normalisePath(raw: string, workingDirectory = WORKSPACE): string {
  const trimmed = raw.replace(/^\.\/+/, '');
  const mem = MEMORY_PREFIXES.find((p) => trimmed === p.slice(0, -1) || trimmed.startsWith(p));
  if (mem) return posix.normalize(trimmed);
  return posix.resolve(workingDirectory, raw);
}

/** `dir/*` matches the whole subtree under dir; `*.md` style globs match within one segment. */
export function matchesPath(pattern: string, path: string): boolean {
  if (pattern === '*') return true;
  if (pattern.endsWith('/*') && !pattern.slice(0, -2).includes('*')) {
    const dir = pattern.slice(0, -2);
    return path === dir || path.startsWith(`${dir}/`);
  }
  const re = new RegExp(`^${pattern.split('*').map(escapeRegex).join('[^/]*')}$`);
  return re.test(path);
}

function escapeRegex(s: string): string {
  return s.replace(/[.+?^${}()|[\]\\]/g, '\\$&');
}

/** The paths a call touches, normalised (missing `path` on a listing tool means the working directory). */
export function callPaths(call: GateCall): string[] {
  const raw = call.arguments.path;
  if (typeof raw === 'string' && raw.length > 0) return [normalisePath(raw, call.workingDirectory)];
  if (call.toolName === 'list_files') return [posix.normalize(call.workingDirectory ?? WORKSPACE)];
  return [];
}

/**
 * Matches `command_pattern` (argv prefix, `*` for any rest) against a simple command line.
 * Until the full shell parser lands (issue 5) a line with any shell syntax never matches an allow.
 */
export function matchesCommand(pattern: string, command: string): boolean {
  if (/[;&|`$<>\n(){}\\]/.test(command)) return false;
  const argv = command.trim().split(/\s+/);
  if (['sh', 'bash', 'eval', 'env', 'xargs', 'sudo', 'find'].includes(argv[0] ?? '')) return false;
  const want = pattern.trim().split(/\s+/);
  for (let i = 0; i < want.length; i++) {
    if (want[i] === '*') return true;
    if (want[i] !== argv[i]) return false;
  }
  return want.length === argv.length;
}

export function ruleMatches(rule: Rule, call: GateCall): boolean {
  if (!matchesTool(rule.toolPattern, call.toolName)) return false;
  if (rule.agentId && rule.agentId !== call.agentId) return false;
  if (rule.source && rule.source !== call.source) return false;
  if (rule.securityGroup && rule.securityGroup !== call.securityGroup) return false;
  if (rule.pathPattern) {
    const paths = callPaths(call);
    if (paths.length === 0 || !paths.every((p) => matchesPath(rule.pathPattern as string, p))) return false;
  }
  if (rule.commandPattern) {
    const command = call.arguments.command;
    if (typeof command !== 'string' || !matchesCommand(rule.commandPattern, command)) return false;
  }
  return true;
}

/** Rules ordered by priority, then insertion order; the first that matches decides. None → Require. */
export function decide(rules: readonly Rule[], call: GateCall): Decision {
  const ordered = [...rules].sort((a, b) => a.priority - b.priority || a.ord - b.ord);
  for (const rule of ordered) {
    if (ruleMatches(rule, call)) {
      return {
        decision: rule.action,
        ruleId: rule.id,
        reason: `rule ${rule.toolPattern}${rule.pathPattern ? ` ${rule.pathPattern}` : ''} (priority ${rule.priority})`,
      };
    }
  }
  return { decision: 'require', reason: 'no rule matched (default closed)' };
}
