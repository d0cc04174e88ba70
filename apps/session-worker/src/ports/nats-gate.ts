import type { GateDecision, GatePort, GateRequest, VisibilityRequest } from '@skald/agent-loop';
import type { RequestOf } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { TurnFacts } from './turn-facts';

/** The `approval.check` payload of a call: with the session's RunContext and security group, always. */
export function checkRequestOf(
  req: GateRequest,
  role: 'user' | 'admin',
  turnId: string | undefined,
): RequestOf<'approval.check'> {
  const args =
    req.arguments && typeof req.arguments === 'object' && !Array.isArray(req.arguments)
      ? (req.arguments as Record<string, unknown>)
      : {};
  const rc = req.runContext;
  return {
    actor: { userId: req.userId, role },
    session_id: req.sessionId,
    tool_call_id: req.toolCallId,
    turn_id: turnId,
    agent_id: req.agentId,
    source: req.source,
    ...(req.securityGroup ? { security_group: req.securityGroup } : {}),
    tool_name: req.name,
    arguments: args,
    run_context: {
      working_directory: rc.workingDirectory,
      allow_fs_reads: rc.allowFsReads ?? [],
      allow_fs_writes: rc.allowFsWrites ?? [],
    },
  };
}

/**
 * How long a turn waits for the approval service to answer a check or register a request: past
 * it the call fails (not run) and the turn goes on, rather than hanging on a dead service.
 */
export const APPROVAL_CALL_TIMEOUT_MS = 5_000;

/** "May this call run?" answered by the approval service over NATS. */
export class NatsGate implements GatePort {
  constructor(
    private readonly bus: Bus,
    private readonly role: 'user' | 'admin',
    /** The turn that asks (logged by the approval service). */
    private readonly turnId?: string,
    /** The turn's remembered facts: the visible tools are asked once per turn and set of names. */
    private readonly facts: TurnFacts = new TurnFacts(),
  ) {}

  async check(req: GateRequest): Promise<GateDecision> {
    const r = await this.bus.call('approval.check', checkRequestOf(req, this.role, this.turnId), {
      timeoutMs: APPROVAL_CALL_TIMEOUT_MS,
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

  /**
   * The names an unconditional Deny leaves visible (the approval service also records every
   * offered name in the tool catalog). Unreachable: null, hide nothing; every call is still checked.
   */
  async visibleTools(req: VisibilityRequest): Promise<ReadonlySet<string> | null> {
    try {
      const request = {
        actor: { userId: req.userId, role: this.role },
        session_id: req.sessionId,
        agent_id: req.agentId,
        source: req.source,
        ...(req.securityGroup ? { security_group: req.securityGroup } : {}),
        tools: [...req.names],
      };
      const r = await this.facts.get(`visible_tools ${JSON.stringify(request)}`, () =>
        this.bus.call('approval.visible_tools', request, { timeoutMs: APPROVAL_CALL_TIMEOUT_MS }),
      );
      return new Set(r.visible);
    } catch {
      return null;
    }
  }
}
