import type { MemoryPort } from '@skald/agent-loop';
import { Bus } from '@skald/messaging';

/** The loop's memory port on the tool runner (`tools.memory_context`); an unreachable runner means no memory context. */
export class NatsMemory implements MemoryPort {
  constructor(
    private readonly bus: Bus,
    private readonly userId: string,
    private readonly role: 'user' | 'admin',
  ) {}

  async queryContext(sessionId: string, userText: string): Promise<string | null> {
    try {
      const r = await this.bus.call('tools.memory_context', {
        actor: { userId: this.userId, role: this.role },
        session_id: sessionId,
        query: userText.slice(0, 64 * 1024),
      });
      return r.context;
    } catch {
      return null;
    }
  }
}
