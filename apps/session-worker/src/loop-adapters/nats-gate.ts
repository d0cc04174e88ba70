import {
  AUTO_DENY_REASON,
  type GateDecision,
  type GatePort,
  type GateRequest,
  type VisibilityRequest,
} from '@skald/agent-loop';
import { type Role, effectiveCallPaths, PATH_TOOLS, type LandingPaths, type RequestOf } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { TurnFacts } from './turn-facts';

/**
 * The `approval.check` payload of a call: with the session's RunContext and security group, always,
 * and the security groups of its owner's groups (`securityGroups`, read at the turn's start).
 */
export function checkRequestOf(
  req: GateRequest,
  role: Role,
  turnId: string | undefined,
  landing?: LandingPaths,
  securityGroups: readonly string[] = [],
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
    ...(securityGroups.length > 0 ? { security_groups: [...securityGroups] } : {}),
    tool_name: req.name,
    arguments: args,
    run_context: {
      working_directory: rc.workingDirectory,
      allow_fs_reads: rc.allowFsReads ?? [],
      allow_fs_writes: rc.allowFsWrites ?? [],
    },
    ...(landing !== undefined ? { landing } : {}),
    auto_deny: req.autoDeny,
  };
}

/** Whether the tool runner owns the call's paths (file tools, `execute_cmd`'s directory): it is asked where they land. */
export function hasLanding(req: GateRequest): boolean {
  if (req.name !== 'execute_cmd' && !PATH_TOOLS.includes(req.name)) return false;
  const args = argsOf(req);
  return effectiveCallPaths(req.name, args, req.runContext.workingDirectory).length > 0;
}

function argsOf(req: GateRequest): Record<string, unknown> {
  return req.arguments && typeof req.arguments === 'object' && !Array.isArray(req.arguments)
    ? (req.arguments as Record<string, unknown>)
    : {};
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
    private readonly role: Role,
    /** The turn that asks (logged by the approval service). */
    private readonly turnId?: string,
    /** The turn's remembered facts: the visible tools are asked once per turn and set of names. */
    private readonly facts: TurnFacts = new TurnFacts(),
    /** The security groups of the session owner's groups (their rules apply to the session's calls). */
    private readonly securityGroups: readonly string[] = [],
  ) {}

  /**
   * The rules judge a path call where it is written and where it lands: the tool runner, which owns
   * the files, says where (`tools.resolve`, the resolution its writes use); an allowed call, or one
   * a human then approves, runs bound to that landing (`tools.exec` `judged_landing`). A runner that does not answer
   * leaves the landing unknown (`[]`): the call is still checked, and whatever would allow it by
   * path (a path rule, the RunContext's pre-authorised paths, a directory-scoped session approval)
   * does not, so it asks a human (or is refused in a session that cannot ask).
   */
  async check(req: GateRequest): Promise<GateDecision> {
    const landing = hasLanding(req) ? await this.landing(req) : undefined;
    const r = await this.bus.call(
      'approval.check',
      checkRequestOf(req, this.role, this.turnId, landing, this.securityGroups),
      {
        timeoutMs: APPROVAL_CALL_TIMEOUT_MS,
      },
    );
    const judged = landing !== undefined && landing.length > 0 ? { landing } : {};
    switch (r.decision) {
      case 'allow':
        return { kind: 'allow', ...judged };
      case 'deny':
        // Refused because nobody can be asked: the same sentence as the loop's own auto-deny.
        if (r.by === 'auto_deny') return { kind: 'deny', reason: AUTO_DENY_REASON };
        return { kind: 'deny', reason: `Tool call denied by policy: ${r.reason}.` };
      case 'require':
        return { kind: 'require', ...judged };
      default: {
        const never: never = r.decision;
        throw new Error(`unknown decision ${String(never)}`);
      }
    }
  }

  /**
   * Where the call lands for its card: the judged landing of its first path (the one a file tool
   * writes, `execute_cmd`'s directory) when the shared resolver names it otherwise, else null.
   */
  landsAt(req: GateRequest, landing: ReadonlyArray<string | null>): string | null {
    const judged = landing[0];
    if (typeof judged !== 'string') return null;
    const named = effectiveCallPaths(req.name, argsOf(req), req.runContext.workingDirectory)[0];
    return named?.ok && named.value.virtual === judged ? null : judged;
  }

  /** Where the call's paths land, by the tool runner; unknown (`[]`) when it does not answer. */
  private async landing(req: GateRequest): Promise<LandingPaths> {
    try {
      const r = await this.bus.call(
        'tools.resolve',
        {
          actor: { userId: req.userId, role: this.role },
          session_id: req.sessionId,
          tool_call_id: req.toolCallId,
          turn_id: this.turnId,
          name: req.name,
          arguments: argsOf(req),
          working_directory: req.runContext.workingDirectory,
        },
        { timeoutMs: APPROVAL_CALL_TIMEOUT_MS },
      );
      return r.landing;
    } catch {
      return [];
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
        ...(this.securityGroups.length > 0 ? { security_groups: [...this.securityGroups] } : {}),
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
