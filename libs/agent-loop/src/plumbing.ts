/** Loop-owned tools whose effect is a store write, recorded atomically with the effect. */
import { isRecord, stringArg } from './json';
import { doneRecord, failedRecord, type CallRecord } from './records';
import { grantScope, toolContext, type FrameContext } from './turn-context';
import type { TodoItem, TodoStatus, ToolCallRow } from './types';

const TODO_STATUSES: readonly TodoStatus[] = ['pending', 'in_progress', 'done'];

export function updateScratchpad(fctx: FrameContext, row: ToolCallRow, args: unknown): CallRecord {
  const key = stringArg(args, 'key');
  const value = stringArg(args, 'value');
  if (!key || value === null) return failedRecord(row, 'update_scratchpad needs a string `key` and a string `value`.');
  const deleting = value === '';
  return doneRecord(row, deleting ? `Deleted scratchpad note "${key}".` : `Saved scratchpad note "${key}".`, {
    extra: [
      {
        kind: 'setScratchpad',
        scratchpadSessionId: fctx.turn.session.scratchpadSessionId,
        key,
        value: deleting ? null : value,
      },
    ],
  });
}

export function writeTodos(fctx: FrameContext, row: ToolCallRow, args: unknown): CallRecord {
  const raw = isRecord(args) ? args['todos'] : undefined;
  if (!Array.isArray(raw)) return failedRecord(row, 'write_todos needs `todos`: an array of {content, status}.');
  const todos: TodoItem[] = [];
  for (const item of raw) {
    const content = stringArg(item, 'content');
    const status = stringArg(item, 'status') as TodoStatus | null;
    if (!content || !status || !TODO_STATUSES.includes(status)) {
      return failedRecord(row, 'Each todo needs `content` and `status` (pending, in_progress or done).');
    }
    todos.push({ content, status });
  }
  const mark: Record<TodoStatus, string> = { pending: '[ ]', in_progress: '[~]', done: '[x]' };
  const text =
    todos.length === 0 ? 'Todo list cleared.' : todos.map((t) => `${mark[t.status]} ${t.content}`).join('\n');
  return doneRecord(row, text, {
    extra: [{ kind: 'setTodos', sessionId: fctx.turn.session.id, frameId: fctx.frame.id, todos }],
  });
}

/** The group name of configuration tools (PROTOCOL.md): grantable only where the tool set lists it. */
export const CONFIG_GROUP = 'config';

/** Why a group the model asked for cannot be activated. */
function notActivatable(group: string): string {
  return group === CONFIG_GROUP
    ? 'there are no configuration tools here; settings are changed by the user in the app'
    : 'no such tool group';
}

/**
 * Grants the groups the tool set lists (their tools are offered from the next round on) and
 * names each other one with the reason; a call that activates nothing fails.
 */
export async function activateTools(fctx: FrameContext, row: ToolCallRow, args: unknown): Promise<CallRecord> {
  const raw = isRecord(args) ? args['groups'] : undefined;
  const groups = Array.isArray(raw) ? [...new Set(raw.filter((g): g is string => typeof g === 'string'))] : [];
  if (groups.length === 0) return failedRecord(row, 'activate_tools needs `groups`: a non-empty array of group names.');
  const available = await fctx.turn.deps.tools.groups(await toolContext(fctx));
  const granted = groups.filter((g) => available.includes(g));
  const refused = groups.filter((g) => !available.includes(g));
  const notActivated =
    refused.length > 0 ? `Not activated: ${refused.map((g) => `${g} (${notActivatable(g)})`).join(', ')}.` : '';
  if (granted.length === 0) {
    return failedRecord(row, `${notActivated} Groups you can activate: ${available.join(', ') || '(none)'}.`);
  }
  const activated = `Activated: ${granted.join(', ')}. Their tools are available from your next step.`;
  return doneRecord(row, notActivated ? `${activated} ${notActivated}` : activated, {
    extra: [{ kind: 'grantTools', scope: grantScope(fctx), groups: granted }],
  });
}

export async function listAgents(fctx: FrameContext, row: ToolCallRow): Promise<CallRecord> {
  const agents = await fctx.turn.deps.catalog.listTaskAgents(fctx.turn.session.userId);
  return doneRecord(
    row,
    JSON.stringify(agents.map((a) => ({ id: a.id, name: a.name, description: a.description, strength: a.strength }))),
  );
}

export function taskCompletedStub(row: ToolCallRow): CallRecord {
  return failedRecord(row, 'task_completed is injected by the system only; you cannot call it.');
}
