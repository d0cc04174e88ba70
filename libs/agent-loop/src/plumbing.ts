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

/** The reserved group of the built-in configuration tools: always grantable, whatever the tool set lists. */
export const CONFIG_GROUP = 'config';

export async function activateTools(fctx: FrameContext, row: ToolCallRow, args: unknown): Promise<CallRecord> {
  const raw = isRecord(args) ? args['groups'] : undefined;
  const groups = Array.isArray(raw) ? raw.filter((g): g is string => typeof g === 'string') : [];
  if (groups.length === 0) return failedRecord(row, 'activate_tools needs `groups`: a non-empty array of group names.');
  const listed = await fctx.turn.deps.tools.groups(await toolContext(fctx));
  const available = [CONFIG_GROUP, ...listed.filter((g) => g !== CONFIG_GROUP)];
  const unknown = groups.filter((g) => !available.includes(g));
  if (unknown.length > 0) {
    return failedRecord(
      row,
      `Unknown tool group(s): ${unknown.join(', ')}. Available: ${available.join(', ') || '(none)'}.`,
    );
  }
  return doneRecord(row, `Activated: ${groups.join(', ')}. Their tools are available from your next step.`, {
    extra: [{ kind: 'grantTools', scope: grantScope(fctx), groups }],
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
