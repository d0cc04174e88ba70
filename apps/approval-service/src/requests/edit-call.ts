import { builtinTool, isBuiltinTool } from '@skald/contracts';
import { structuredPatch } from 'diff';
import type { GateInput, GateResult } from '../rules/gate-input';
import { decideByRules } from '../rules/rule-engine';
import type { RuleSet } from '../rules/rule-set';
import type { StoredGateContext } from './requests.repository';

/**
 * Edit before approve, as a pure function: a human's edited arguments for a pending call are
 * checked by the tool's own schema, then judged by the same gate as the model's call (rules,
 * built-in rules, deny patterns, the shell parser, path resolution) in the context the call was
 * judged in. A Deny refuses the edit; Allow or Require accept it (the human's edit is the approval).
 * An edit can therefore never reach a call the gate denies.
 */

/** The diff lines kept of one edit; the rest is counted. */
export const MAX_EDIT_DIFF_CHARS = 64 * 1024;
/**
 * Past this many changed lines, or this many milliseconds, an argument's diff is not computed
 * (bounded work on text of any size): it reads as replaced.
 */
export const MAX_EDIT_LENGTH = 1_000;
export const MAX_EDIT_DIFF_MS = 250;

export interface EditedCall {
  toolName: string;
  /** The arguments the call was asked with (effective: working directory injected), as stored. */
  original: Record<string, unknown>;
  /** The context the gate judged the call in; null: the request predates edits. */
  gateContext: StoredGateContext | null;
  /** The session's source. */
  source: string;
}

export type EditJudgement =
  | {
      kind: 'accepted';
      /** The arguments the call runs with: the human's, validated. */
      arguments: Record<string, unknown>;
      /** A unified diff of each changed argument (original → edited). */
      diff: string;
      /** The gate's decision on the edited call (Allow or Require). */
      decision: GateResult;
    }
  /** The edit changes nothing: a plain approval. */
  | { kind: 'unchanged' }
  /** `ruleId`: the rule that denies the edited call. */
  | { kind: 'refused'; code: 'invalid_input' | 'forbidden'; message: string; field?: string; ruleId?: string };

export function judgeEdit(rules: RuleSet, call: EditedCall, edited: Record<string, unknown>): EditJudgement {
  if (!isBuiltinTool(call.toolName))
    return refused('invalid_input', `calls of ${call.toolName} cannot be edited: approve or reject it as it is`);
  if (call.gateContext === null)
    return refused('invalid_input', 'this request was asked before edits were possible: approve or reject it as it is');
  const schema = builtinTool(call.toolName).args;
  const parsed = schema.safeParse(edited);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const field = issue?.path.map(String).join('.') ?? '';
    return refused(
      'invalid_input',
      `the edited ${call.toolName} call is not valid: ${field ? `${field}: ` : ''}${issue?.message ?? 'invalid'}`,
      field ? `arguments.${field}` : 'arguments',
    );
  }
  const known = parsed.data as Record<string, unknown>;
  const unknown = Object.keys(edited).find((k) => !(k in known));
  if (unknown !== undefined)
    return refused('invalid_input', `${call.toolName} has no argument ${JSON.stringify(unknown)}`, 'arguments');
  // The human's own keys, as the schema read them (no defaults added that the human did not write).
  const args = Object.fromEntries(Object.keys(edited).map((k) => [k, known[k]]));
  if (canonical(args) === canonical(call.original)) return { kind: 'unchanged' };
  const ctx = call.gateContext;
  const input: GateInput = {
    toolName: call.toolName,
    arguments: args,
    agentId: ctx.agent_id,
    source: call.source,
    ...(ctx.security_group !== undefined ? { securityGroup: ctx.security_group } : {}),
    ...(ctx.security_groups !== undefined ? { securityGroups: ctx.security_groups } : {}),
    isAdmin: ctx.is_admin === true,
    runContext: {
      workingDirectory: ctx.run_context?.working_directory ?? null,
      allowFsReads: ctx.run_context?.allow_fs_reads ?? [],
      allowFsWrites: ctx.run_context?.allow_fs_writes ?? [],
    },
    // Where the edited paths land is not known here: nothing allows by path, every deny still
    // judges the path as written. The session worker judges the landing again before it runs.
    landing: [],
    autoDeny: false,
  };
  const decision = decideByRules(rules, input);
  if (decision.decision === 'deny')
    return {
      ...refused('forbidden', `the edited call is denied: ${decision.reason}`, 'arguments'),
      ...(decision.ruleId !== undefined ? { ruleId: decision.ruleId } : {}),
    };
  return { kind: 'accepted', arguments: args, diff: describeEdit(call.original, args), decision };
}

function refused(code: 'invalid_input' | 'forbidden', message: string, field?: string): EditJudgement {
  return { kind: 'refused', code, message, ...(field ? { field } : {}) };
}

/** JSON with sorted keys: two argument objects are the same call when these are equal. */
export function canonical(value: unknown): string {
  return JSON.stringify(value, (_k, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(
          Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)),
        )
      : v,
  );
}

/**
 * A unified diff of each changed argument, in key order: a string argument line by line, any
 * other value as JSON. Bounded: an argument with more than {@link MAX_EDIT_LENGTH} changed lines
 * (or whose diff takes past `timeoutMs`, {@link MAX_EDIT_DIFF_MS} by default) reads as replaced, and the whole text stops
 * at {@link MAX_EDIT_DIFF_CHARS}.
 */
export function describeEdit(
  original: Record<string, unknown>,
  edited: Record<string, unknown>,
  timeoutMs = MAX_EDIT_DIFF_MS,
): string {
  const keys = [...new Set([...Object.keys(original), ...Object.keys(edited)])].sort();
  const parts: string[] = [];
  for (const key of keys) {
    const before = key in original ? text(original[key]) : undefined;
    const after = key in edited ? text(edited[key]) : undefined;
    if (before === after) continue;
    parts.push(argumentDiff(key, before, after, timeoutMs));
  }
  const all = parts.join('\n');
  if (all.length <= MAX_EDIT_DIFF_CHARS) return all;
  return `${all.slice(0, MAX_EDIT_DIFF_CHARS)}\n… ${all.length - MAX_EDIT_DIFF_CHARS} more characters of the diff`;
}

function text(v: unknown): string {
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function argumentDiff(key: string, before: string | undefined, after: string | undefined, timeoutMs: number): string {
  const head = [
    `--- ${key} (original)${before === undefined ? ' (absent)' : ''}`,
    `+++ ${key} (edited)${after === undefined ? ' (removed)' : ''}`,
  ];
  const patch = structuredPatch(key, key, withNewline(before ?? ''), withNewline(after ?? ''), '', '', {
    context: 3,
    maxEditLength: MAX_EDIT_LENGTH,
    timeout: timeoutMs,
  });
  if (!patch) {
    const lines = (s: string | undefined) => (s === undefined ? 0 : s.split('\n').length);
    return [...head, `@@ replaced: ${lines(before)} lines → ${lines(after)} lines @@`].join('\n');
  }
  const body = patch.hunks.flatMap((h) => [
    `@@ -${h.oldStart},${h.oldLines} +${h.newStart},${h.newLines} @@`,
    ...h.lines.filter((l) => !l.startsWith('\\')),
  ]);
  return [...head, ...body].join('\n');
}

function withNewline(s: string): string {
  return s === '' || s.endsWith('\n') ? s : `${s}\n`;
}
