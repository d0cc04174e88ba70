/**
 * AGENT.md directives and the static system prompt (spec 000 "Context Building" 1): AGENT.md with
 * its directives resolved, then the `inject_memory` documents, then the MCP list when AGENT.md did
 * not place it. Pure functions: the catalog hands everything in.
 *
 * Directives (HTML comments, so an AGENT.md still reads well as Markdown):
 *   `<!-- include: NAME -->`  the shared fragment `agents/_shared/NAME.md` (nested up to 3 deep)
 *   `<!-- agents -->`         the task agents, as the `__AGENTS__` sentinel
 *   `<!-- mcp -->`            the MCP servers, as the `__MCP_SERVERS__` sentinel
 * Sentinels `__KEY__` are replaced at build time from the agent's substitutions (the loop applies
 * them); the catalog provides AGENTS, MCP_SERVERS, AGENT_ID, AGENT_NAME, WORKSPACE and the
 * operator's `SKALD_PROMPT_VARS`.
 */

const DIRECTIVE = /<!--\s*(include\s*:\s*([A-Za-z0-9_-]+)|agents|mcp)\s*-->/g;
const MAX_INCLUDE_DEPTH = 3;

export class PromptDirectiveError extends Error {
  readonly code = 'invalid_input';
  constructor(message: string) {
    super(message);
    this.name = 'PromptDirectiveError';
  }
}

export interface McpServerInfo {
  name: string;
  description: string | null;
  toolsCount: number;
}

export interface AgentListEntry {
  id: string;
  name: string;
  description: string | null;
}

/** Resolves the directives of an AGENT.md text; throws `PromptDirectiveError` naming an unknown fragment or a cycle. */
export function resolveDirectives(
  text: string,
  fragments: ReadonlyMap<string, string>,
  depth = 0,
  seen: string[] = [],
): string {
  return text.replace(DIRECTIVE, (_all, directive: string, fragment: string | undefined) => {
    if (fragment === undefined) return directive === 'agents' ? '__AGENTS__' : '__MCP_SERVERS__';
    const body = fragments.get(fragment);
    if (body === undefined) {
      throw new PromptDirectiveError(
        `unknown fragment "${fragment}" in <!-- include: ${fragment} --> (known: ${[...fragments.keys()].sort().join(', ') || 'none'})`,
      );
    }
    if (seen.includes(fragment) || depth >= MAX_INCLUDE_DEPTH) {
      throw new PromptDirectiveError(`includes nest too deep or loop: ${[...seen, fragment].join(' → ')}`);
    }
    return resolveDirectives(body.trimEnd(), fragments, depth + 1, [...seen, fragment]);
  });
}

export function renderAgentList(agents: AgentListEntry[]): string {
  if (agents.length === 0) return '(no task agents are available)';
  return agents.map((a) => `- \`${a.id}\` — ${a.name}${a.description ? `: ${a.description}` : ''}`).join('\n');
}

export function renderMcpList(servers: McpServerInfo[]): string {
  if (servers.length === 0) return '(no MCP servers are configured)';
  return servers
    .map(
      (s) =>
        `- \`${s.name}\`${s.description ? ` — ${s.description}` : ''} (${s.toolsCount} tool${s.toolsCount === 1 ? '' : 's'}; activate_tools {"groups": ["${s.name}"]})`,
    )
    .join('\n');
}

/** One `inject_memory` document as it appears in the static prompt. */
export function memoryBlock(path: string, content: string): string {
  return `<memory path="${path}">\n${content.trimEnd()}\n</memory>`;
}

/**
 * The static system prompt: AGENT.md (directives resolved) + the injected memory documents that
 * exist + the MCP list when AGENT.md has no `<!-- mcp -->` and there is at least one server.
 */
export function staticPrompt(input: {
  agentMd: string;
  fragments: ReadonlyMap<string, string>;
  memory: Array<{ path: string; content: string | null }>;
  mcpServers: McpServerInfo[];
}): string {
  const resolved = resolveDirectives(input.agentMd, input.fragments).trim();
  const parts = [resolved];
  const docs = input.memory.filter((d): d is { path: string; content: string } => d.content !== null);
  if (docs.length > 0) {
    parts.push(
      [
        'The following memory documents are part of your instructions:',
        ...docs.map((d) => memoryBlock(d.path, d.content)),
      ].join('\n\n'),
    );
  }
  if (!resolved.includes('__MCP_SERVERS__') && input.mcpServers.length > 0) {
    parts.push('MCP servers:\n__MCP_SERVERS__');
  }
  return parts.join('\n\n');
}
