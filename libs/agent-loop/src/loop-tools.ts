/** Definitions of the tools the loop implements itself (PROTOCOL.md "Built-in tools"). */
import type { WireTool } from './types';

export const LOOP_TOOL_NAMES = [
  'update_scratchpad',
  'write_todos',
  'ask_user_clarification',
  'activate_tools',
  'list_agents',
  'execute_task',
  'execute_subtask',
  'task_completed',
] as const;

export type LoopToolName = (typeof LOOP_TOOL_NAMES)[number];

export function isLoopTool(name: string): name is LoopToolName {
  return (LOOP_TOOL_NAMES as readonly string[]).includes(name);
}

const fn = (name: string, description: string, properties: Record<string, unknown>, required: string[]): WireTool => ({
  type: 'function',
  function: { name, description, parameters: { type: 'object', properties, required, additionalProperties: false } },
});

export const UPDATE_SCRATCHPAD = fn(
  'update_scratchpad',
  'Save a note in the session scratchpad (shown to you every round). An empty value deletes the key.',
  { key: { type: 'string' }, value: { type: 'string' } },
  ['key', 'value'],
);

export const WRITE_TODOS = fn(
  'write_todos',
  'Replace your todo list for this task.',
  {
    todos: {
      type: 'array',
      items: {
        type: 'object',
        properties: {
          content: { type: 'string' },
          status: { type: 'string', enum: ['pending', 'in_progress', 'done'] },
        },
        required: ['content', 'status'],
      },
    },
  },
  ['todos'],
);

export const ASK_USER_CLARIFICATION = fn(
  'ask_user_clarification',
  'Ask the user a question and wait for the answer.',
  {
    title: { type: 'string' },
    question: { type: 'string' },
    suggested_answers: { type: 'array', items: { type: 'string' } },
  },
  ['title', 'question'],
);

export const ACTIVATE_TOOLS = fn(
  'activate_tools',
  'Make tool groups (the MCP server names your instructions list) available from your next step on.',
  { groups: { type: 'array', items: { type: 'string' } } },
  ['groups'],
);

export const LIST_AGENTS = fn('list_agents', 'List the agents you can delegate tasks to.', {}, []);

export const EXECUTE_TASK = fn(
  'execute_task',
  'Delegate a task to another agent. mode sync (default) waits for its answer; async runs it in the background and delivers the result later.',
  {
    agent_id: { type: 'string' },
    prompt: { type: 'string' },
    title: { type: 'string' },
    description: { type: 'string' },
    mode: { type: 'string', enum: ['sync', 'async'] },
    client: { type: 'string' },
  },
  ['agent_id', 'prompt'],
);

export const EXECUTE_SUBTASK = fn(
  'execute_subtask',
  'Delegate a subtask to another agent and wait for its answer.',
  { agent_id: { type: 'string' }, prompt: { type: 'string' }, title: { type: 'string' } },
  ['agent_id', 'prompt'],
);
