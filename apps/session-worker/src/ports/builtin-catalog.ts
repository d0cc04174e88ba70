import type { AgentCatalogPort, AgentDefinition, AgentSummary } from '@skald/agent-loop';

const MAIN_PROMPT = [
  "You are Skald, a capable assistant working in the user's workspace.",
  'Use the tools to read and change files and to run commands; say plainly what you did.',
].join('\n');

/**
 * The skeleton's catalog: the `main` chat agent only. The agents catalog of issue 7 (files in
 * `agents/`, per-user overrides, task agents) replaces it.
 */
export class BuiltinCatalog implements AgentCatalogPort {
  getAgent(agentId: string): Promise<AgentDefinition | null> {
    if (agentId !== 'main') return Promise.resolve(null);
    return Promise.resolve({
      id: 'main',
      name: 'Skald',
      description: 'The chat agent',
      prompt: MAIN_PROMPT,
      type: 'chat',
      client: null,
      strength: null,
      tools: { allow: [], deny: [] },
      substitutions: {},
      tailReminder: null,
    });
  }

  listTaskAgents(): Promise<AgentSummary[]> {
    return Promise.resolve([]);
  }
}
