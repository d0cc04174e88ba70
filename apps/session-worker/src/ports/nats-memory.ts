import type { MemoryPort } from '@skald/agent-loop';
import { Bus } from '@skald/messaging';
import { TurnFacts } from './turn-facts';

/**
 * The loop's memory port on the tool runner (`tools.memory_context`); an unreachable runner means no
 * memory context. Asked once per turn and message (the turn's `TurnFacts` forget it after a call that
 * may have written a memory document).
 */
export class NatsMemory implements MemoryPort {
  constructor(
    private readonly bus: Bus,
    private readonly userId: string,
    private readonly role: 'user' | 'admin',
    private readonly facts: TurnFacts = new TurnFacts(),
  ) {}

  async queryContext(sessionId: string, userText: string): Promise<string | null> {
    try {
      const query = userText.slice(0, 64 * 1024);
      const r = await this.facts.get(`memory_context ${sessionId} ${query}`, () =>
        this.bus.call('tools.memory_context', {
          actor: { userId: this.userId, role: this.role },
          session_id: sessionId,
          query,
        }),
      );
      return r.context;
    } catch {
      return null;
    }
  }
}
