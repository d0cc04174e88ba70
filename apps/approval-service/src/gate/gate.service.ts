import { Inject, Injectable, Optional } from '@nestjs/common';
import { loggerWithIds, requestLogIds } from '@skald/service-kit/log-ids';
import type { Logger } from '@skald/service-kit';
import { ApprovalMetrics } from '../approval-metrics';
import { ParsedRequestOf } from '@skald/contracts';
import { argsDigest, AuditService } from '../audit/audit.service';
import { BypassesService } from '../bypasses/bypasses.service';
import { CatalogService } from '../catalog/catalog.service';
import { APPROVAL_LOGGER } from '../config';
import { ApprovalError } from '../errors';
import { decideByRules, relax, visibleTools } from '../rules/rule-engine';
import { GateInput, GateResult } from '../rules/gate-input';
import { RulesService } from '../rules/rules.service';
import { initShellParser } from '../rules/shell-analysis';

type CheckRequest = ParsedRequestOf<'approval.check'>;

/**
 * "May this call run?": the rules from the in-memory rule set, then the RunContext fast path and
 * the session's bypasses (read from Postgres only when the rules say Require). Every decision is
 * audited in the background.
 */
@Injectable()
export class GateService {
  constructor(
    private readonly rules: RulesService,
    private readonly bypasses: BypassesService,
    private readonly audit: AuditService,
    private readonly catalog: CatalogService,
    @Inject(APPROVAL_LOGGER) private readonly log: Logger,
    @Optional() private readonly metrics?: ApprovalMetrics,
  ) {}

  async check(req: CheckRequest): Promise<GateResult> {
    const started = performance.now();
    // The request's ids (user, session, turn, call) name the line.
    const log = loggerWithIds(this.log, requestLogIds(req));
    // No decision goes unaudited: while the audit cannot be written and its buffer is full, every
    // call is refused (nothing runs, so nothing is left to audit).
    if (!this.audit.accepting) {
      const refused: GateResult = {
        decision: 'deny',
        by: 'policy',
        reason: `the audit log cannot be written (${this.audit.pending} decisions wait for the database): tool calls are refused until it can be`,
      };
      this.metrics?.decisions.inc({ decision: refused.decision, by: refused.by });
      log.warn(
        { tool: req.tool_name, decision: refused.decision, by: refused.by },
        'tool call refused: audit log full',
      );
      return refused;
    }
    const input = toInput(req);
    const result = await this.decide(input, req.session_id);
    this.metrics?.checkSeconds.observe((performance.now() - started) / 1000);
    this.metrics?.decisions.inc({ decision: result.decision, by: result.by });
    // An allow by the rules is the common case of every tool call: the audit row records it, the
    // log line goes to debug (a synchronous write per call was a sixth of the service's CPU). What
    // needs a human, what is refused and what a bypass or the RunContext let through stay at info.
    const line = { tool: req.tool_name, decision: result.decision, by: result.by, ruleId: result.ruleId };
    if (result.decision === 'allow' && result.by === 'rule') log.debug(line, 'tool call checked');
    else log.info(line, 'tool call checked');
    const entry = {
      userId: req.actor.userId,
      sessionId: req.session_id,
      toolCallId: req.tool_call_id ?? null,
      requestId: null,
      toolName: req.tool_name,
      argsDigest: argsDigest(req.arguments),
      decision: result.decision,
      by: result.by,
      actorUserId: null,
      ruleId: result.ruleId ?? null,
      note: result.reason,
    };
    // The inbox item a `require` becomes reads its rule from this row: it is written first.
    if (result.decision === 'require') await this.audit.recordNow(entry);
    else this.audit.record(entry);
    return result;
  }

  /**
   * `POST /api/approval/rules/test`: the same decision, not audited. For a named session the
   * gateway sends what a real check of it carries (agent, source, group, RunContext, auto-deny, the
   * owner's groups' security groups); for a test as a user or a group, their security groups and role;
   * the session's bypasses are read here as for a check. Paths are judged lexically (a test has no
   * landing from the tool runner).
   */
  async test(req: ParsedRequestOf<'approval.rules.test'>): Promise<GateResult> {
    if (req.actor.role !== 'admin' && !req.session_id)
      throw new ApprovalError('forbidden', 'testing rules without a session of yours is for admins');
    const input: GateInput = {
      toolName: req.tool_name,
      arguments: req.arguments,
      agentId: req.agent_id ?? 'main',
      source: req.source ?? 'web',
      securityGroup: req.security_group,
      securityGroups: req.security_groups,
      isAdmin: (req.owner_role ?? req.actor.role) === 'admin',
      runContext: req.run_context
        ? {
            workingDirectory: req.run_context.working_directory,
            allowFsReads: req.run_context.allow_fs_reads,
            allowFsWrites: req.run_context.allow_fs_writes,
          }
        : undefined,
      autoDeny: req.auto_deny === true,
    };
    return this.decide(input, req.session_id);
  }

  async visibleTools(req: ParsedRequestOf<'approval.visible_tools'>): Promise<string[]> {
    this.catalog.offered(req.actor.userId, req.tools);
    const set = await this.rules.ruleSet().catch(() => null);
    if (!set) return req.tools; // cannot read the rules: hide nothing, every call still asks
    const ctx = {
      agentId: req.agent_id,
      source: req.source,
      securityGroup: req.security_group,
      securityGroups: req.security_groups,
    };
    return visibleTools(set, req.tools, ctx);
  }

  private async decide(input: GateInput, sessionId: string | undefined): Promise<GateResult> {
    let byRules: GateResult;
    // the grammar loads once; a line checked while it cannot load needs a human
    if (input.toolName === 'execute_cmd') await initShellParser().catch(() => undefined);
    try {
      byRules = decideByRules(await this.rules.ruleSet(), input);
    } catch {
      return { decision: 'require', reason: 'the rules could not be loaded: asking', by: 'rule' };
    }
    if (byRules.decision !== 'require') return byRules;
    // The RunContext and the session's bypasses relax a Require before auto-deny refuses it.
    const relaxed = relax(byRules, { ...input, autoDeny: false });
    if (relaxed.decision !== 'require') return relaxed;
    const scopes = sessionId ? await this.bypasses.activeScopes(sessionId).catch(() => []) : [];
    return scopes.length > 0 || input.autoDeny ? relax(byRules, { ...input, bypasses: scopes }) : relaxed;
  }
}

function toInput(req: CheckRequest): GateInput {
  return {
    toolName: req.tool_name,
    arguments: req.arguments,
    agentId: req.agent_id,
    source: req.source,
    securityGroup: req.security_group,
    securityGroups: req.security_groups,
    isAdmin: req.actor.role === 'admin',
    runContext: req.run_context
      ? {
          workingDirectory: req.run_context.working_directory,
          allowFsReads: req.run_context.allow_fs_reads,
          allowFsWrites: req.run_context.allow_fs_writes,
        }
      : undefined,
    // A check that carries no landing judges its paths as landing nobody knows where: nothing
    // that allows by path (a path rule, the fast path, a directory scope) allows it.
    landing: req.landing ?? [],
    autoDeny: req.auto_deny === true,
  };
}
