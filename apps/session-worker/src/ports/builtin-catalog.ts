import type { AgentCatalogPort, AgentDefinition, AgentSummary } from '@skald/agent-loop';

const AGENTS: readonly AgentDefinition[] = [
  {
    id: 'main',
    name: 'Skald',
    description: 'The chat agent',
    prompt: [
      "You are Skald, a capable assistant working in the user's workspace.",
      'Use the tools to read and change files and to run commands; say plainly what you did.',
    ].join('\n'),
    type: 'chat',
    client: null,
    strength: null,
    tools: { allow: [], deny: [] },
    substitutions: {},
    tailReminder: null,
  },
  {
    id: 'generalist',
    name: 'Generalist',
    description: 'Does a self-contained task and reports the result.',
    prompt:
      'You are a careful generalist. Do the task you are given with the tools you have, then answer with the result only.',
    type: 'task',
    client: null,
    strength: null,
    tools: { allow: [], deny: [] },
    substitutions: {},
    tailReminder: null,
  },
];

/**
 * The skeleton's catalog: the `main` chat agent and one task agent, `generalist`, so that
 * delegation works end to end. The agents catalog of issue 7 (files in `agents/`, per-user
 * overrides, the full set of task agents) replaces it.
 */
export class BuiltinCatalog implements AgentCatalogPort {
  getAgent(agentId: string): Promise<AgentDefinition | null> {
    return Promise.resolve(AGENTS.find((a) => a.id === agentId) ?? null);
  }

  listTaskAgents(): Promise<AgentSummary[]> {
    return Promise.resolve(
      AGENTS.filter((a) => a.type === 'task').map((a) => ({
        id: a.id,
        name: a.name,
        description: a.description,
        strength: a.strength,
      })),
    );
  }
}
