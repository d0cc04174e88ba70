import type { GateDecision, GatePort, GateRequest } from '@skald/agent-loop';
import { Bus } from '@skald/messaging';

/** "May this call run?" answered by the approval service over NATS. */
export class NatsGate implements GatePort {
  constructor(
    private readonly bus: Bus,
    private readonly role: 'user' | 'admin',
    /** The turn that asks (logged by the approval service). */
    private readonly turnId?: string,
  ) {}

  async check(req: GateRequest): Promise<GateDecision> {
    const args =
      req.arguments && typeof req.arguments === 'object' && !Array.isArray(req.arguments)
        ? (req.arguments as Record<string, unknown>)
        : {};
    const r = await this.bus.call('approval.check', {
      actor: { userId: req.userId, role: this.role },
      session_id: req.sessionId,
      tool_call_id: req.toolCallId,
      turn_id: this.turnId,
      agent_id: req.agentId,
      source: req.source,
      tool_name: req.name,
      arguments: args,
    });
    switch (r.decision) {
      case 'allow':
        return { kind: 'allow' };
      case 'deny':
        return { kind: 'deny', reason: `Tool call denied by policy: ${r.reason}.` };
      case 'require':
        return { kind: 'require' };
      default: {
        const never: never = r.decision;
        throw new Error(`unknown decision ${String(never)}`);
      }
    }
  }
}
