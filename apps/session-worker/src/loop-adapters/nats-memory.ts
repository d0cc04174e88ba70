import type { MemoryPort } from '@skald/agent-loop';
import { Bus } from '@skald/messaging/bus-port';
import { TurnFacts } from './turn-facts';
import type { Role } from '@skald/contracts';

/** The longest query the tool runner takes (`MemoryTurnRequest.query`). */
const MAX_QUERY_CHARS = 64 * 1024;

export interface MemoryDocument {
  path: string;
  content: string | null;
}

/** Memory documents by path (the agents' `inject_memory` files), for the catalog's prompt. */
export interface MemoryDocuments {
  /** Throws when the tool runner does not answer. */
  documents(paths: readonly string[]): Promise<MemoryDocument[]>;
}

/**
 * A turn's memory on the tool runner (`tools.memory_turn`): the agents' `inject_memory` documents
 * for the catalog, and the loop's memory port. The loop says the root frame's query before its
 * agent loads (`expectQuery`), so the agent's documents and the memory context come in ONE request;
 * the context is then remembered in the turn's `TurnFacts` under the key `queryContext` asks with
 * (forgotten after a call that may have written a memory document, and asked again alone). An
 * unreachable runner means no memory context (and the catalog's prompt goes without the documents).
 */
export class NatsMemory implements MemoryPort, MemoryDocuments {
  /** The user's memory documents are files: their context is for an agent that may read files. */
  readonly readTool = 'read_file';
  private expected: { sessionId: string; query: string } | null = null;

  constructor(
    private readonly bus: Bus,
    private readonly userId: string,
    private readonly role: Role,
    private readonly facts: TurnFacts = new TurnFacts(),
  ) {}

  expectQuery(sessionId: string, userText: string): void {
    this.expected = { sessionId, query: userText.slice(0, MAX_QUERY_CHARS) };
  }

  async queryContext(sessionId: string, userText: string): Promise<string | null> {
    try {
      const query = userText.slice(0, MAX_QUERY_CHARS);
      return await this.facts.get(contextKey(sessionId, query), async () => (await this.ask([], query)).context);
    } catch {
      return null;
    }
  }

  /** The documents at `paths`; with them, the context of the expected query unless it is known or asked already. */
  async documents(paths: readonly string[]): Promise<MemoryDocument[]> {
    if (paths.length === 0) return [];
    const expected = this.expected;
    this.expected = null;
    const key = expected && contextKey(expected.sessionId, expected.query);
    if (!expected || !key || this.facts.has(key)) return (await this.ask(paths, null)).documents;
    const reply = this.ask(paths, expected.query);
    this.facts.get(key, async () => (await reply).context).catch(() => undefined);
    return (await reply).documents;
  }

  private ask(paths: readonly string[], query: string | null) {
    return this.bus.call('tools.memory_turn', {
      actor: { userId: this.userId, role: this.role },
      paths: [...paths],
      query,
    });
  }
}

function contextKey(sessionId: string, query: string): string {
  return `memory_context ${sessionId} ${query}`;
}
