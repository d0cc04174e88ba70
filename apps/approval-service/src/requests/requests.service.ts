import { Inject, Injectable, Optional } from '@nestjs/common';
import { loggerWithIds, requestLogIds } from '@skald/service-kit/log-ids';
import type { Logger } from '@skald/service-kit';
import {
  Actor,
  DecisionsReply,
  HumanRequestState,
  HumanRequestStatus,
  InboxDto,
  ParsedRequestOf,
  UserEvent,
} from '@skald/contracts';
import { nameOfRule } from '../audit/audit.service';
import { AuditRepository } from '../audit/audit.repository';
import { argsDigest } from '../audit/audit.service';
import { BypassesRepository } from '../bypasses/bypasses.repository';
import { BypassesService, ownerScope } from '../bypasses/bypasses.service';
import { APPROVAL_LOGGER, DEFAULT_SESSION_APPROVAL_SECS, SESSION_APPROVAL_SECS } from '../config';
import { BypassScope } from '../rules/gate-input';
import { narrowScopes } from '../rules/session-bypass';
import { ApprovalError, requestNotFound } from '../errors';
import { ApprovalMetrics } from '../approval-metrics';
import { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import { RulesService } from '../rules/rules.service';
import { initShellParser } from '../rules/shell-analysis';
import { canonical, judgeEdit } from './edit-call';
import { decisionItems } from './decision-items';
import { decisionOf } from './request-decision';
import { requestNotification } from './request-notification';
import { RequestEdit, RequestsRepository, StoredRequest } from './requests.repository';

type ResolveRequest = ParsedRequestOf<'approval.resolve'>;

/**
 * Durable human requests (approvals and clarifications): registered by the session worker,
 * answered from any surface, first answer wins. Every change is committed before it is announced
 * (`approval.resolved.<sessionId>`, the user's inbox events, the session's doorbell).
 */
@Injectable()
export class RequestsService {
  constructor(
    private readonly repo: RequestsRepository,
    private readonly audit: AuditRepository,
    private readonly bypasses: BypassesRepository,
    private readonly bypassService: BypassesService,
    private readonly events: ApprovalEventsPublisher,
    private readonly rules: RulesService,
    @Inject(APPROVAL_LOGGER) private readonly log: Logger,
    @Optional() private readonly metrics?: ApprovalMetrics,
    @Optional()
    @Inject(SESSION_APPROVAL_SECS)
    private readonly sessionApprovalSecs: number = DEFAULT_SESSION_APPROVAL_SECS,
  ) {}

  /** Idempotent by request id: a recovery re-asking gets the same request (and its answer, if any). */
  async register(req: ParsedRequestOf<'approval.register'>): Promise<HumanRequestState> {
    if (req.kind === 'clarification' && !req.question)
      throw new ApprovalError('invalid_input', 'a clarification needs its question', 'question');
    const r = await this.repo.insertOrGet({
      id: req.request_id,
      kind: req.kind,
      toolCallId: req.tool_call_id,
      sessionId: req.session_id,
      userId: req.actor.userId,
      source: req.source,
      toolName: req.tool_name,
      arguments: typeof req.arguments === 'string' ? req.arguments : JSON.stringify(req.arguments ?? {}),
      preview: req.preview,
      question: req.question,
      turnId: req.turn_id ?? null,
      landsAt: req.kind === 'approval' ? (req.lands_at ?? null) : null,
      gateContext:
        req.kind === 'approval' && req.gate_context
          ? { ...req.gate_context, is_admin: req.actor.role === 'admin' }
          : null,
    });
    if (!r) throw new ApprovalError('conflict', 'this request id belongs to another request');
    if (r.created)
      loggerWithIds(this.log, requestLogIds(req)).info(
        { requestId: r.row.id, kind: r.row.kind, tool: r.row.toolName },
        'human request registered',
      );
    if (r.row.status === 'pending') {
      this.events.userEvent(r.row.userId, requestedEvent(r.row));
      this.events.notify(requestNotification(r.row, req.job_run_id ?? null));
    }
    return toState(r.row);
  }

  async get(actor: Actor, requestId: string): Promise<HumanRequestState> {
    const row = await this.repo.findById({ userId: ownerScope(actor) }, requestId);
    if (!row) throw requestNotFound();
    return toState(row);
  }

  async resolve(req: ResolveRequest): Promise<HumanRequestState> {
    const owner = { userId: ownerScope(req.actor) };
    const row = req.request_id
      ? await this.repo.findById(owner, req.request_id)
      : await this.repo.findByToolCall(owner, req.tool_call_id as string);
    if (!row) throw requestNotFound();
    const status = targetStatus(row, req);
    if (sameEditRetried(row, req)) return toState(row);
    if (row.status !== 'pending') throw conflict(row);
    const edit = req.arguments !== undefined ? await this.judgeEdit(row, req) : null;
    const note = req.note?.trim() ? req.note : null;
    const answer = req.action === 'answer' ? (req.answer ?? '') : null;
    const opensBypass = req.action === 'approve' && (req.bypass_secs !== undefined || req.bypass_scope !== undefined);
    const resolved = await this.repo.transaction(async (db) => {
      const updated = await this.repo.resolvePending(db, {
        id: row.id,
        status,
        note,
        answer,
        actorUserId: req.actor.userId,
        edit,
        channel: req.channel ?? null,
        bypass: opensBypass
          ? { scope: req.bypass_scope ?? 'call', ...(req.bypass_secs !== undefined ? { secs: req.bypass_secs } : {}) }
          : null,
      });
      if (!updated) return null;
      await this.audit.insert(
        [
          {
            userId: updated.userId,
            sessionId: updated.sessionId,
            toolCallId: updated.toolCallId,
            requestId: updated.id,
            toolName: updated.toolName,
            argsDigest: argsDigest(updated.arguments),
            decision: req.action,
            by: 'human',
            actorUserId: req.actor.userId,
            channel: req.channel ?? null,
            ruleId: null,
            note,
            edit: edit ? { argsDigest: argsDigest(edit.arguments), diff: edit.diff } : null,
          },
        ],
        db,
      );
      if (opensBypass) {
        const scope = req.bypass_scope ?? 'call';
        const scopes = scope === 'call' ? callScopes(updated) : [scope];
        const secs = req.bypass_secs ?? (scope === 'call' ? this.sessionApprovalSecs : undefined);
        for (const s of scopes)
          await this.bypasses.create(
            { sessionId: updated.sessionId, userId: updated.userId, createdBy: req.actor.userId, scope: s, secs },
            db,
          );
      }
      return updated;
    });
    if (!resolved) throw conflict((await this.repo.findById(owner, row.id)) ?? row);
    this.metrics?.humanWait.observe({ action: req.action }, Math.max(0, Date.now() - row.createdAt.getTime()) / 1000);
    if (opensBypass) this.bypassService.opened(resolved.sessionId);
    // Named as the turn's other lines: its owner, session, turn and call (the person answering is the actor).
    loggerWithIds(this.log, {
      userId: resolved.userId,
      sessionId: resolved.sessionId,
      turnId: resolved.turnId ?? undefined,
      toolCallId: resolved.toolCallId,
    }).info(
      { requestId: resolved.id, status: resolved.status, actorUserId: req.actor.userId, edited: edit !== null },
      'human request resolved',
    );
    this.announce(resolved);
    this.events.wake(resolved.sessionId);
    return toState(resolved);
  }

  /**
   * A human's edited arguments, judged by the tool's schema and the gate (`judgeEdit`): the edit
   * to store, null when it changes nothing; refused with the reason (the request stays pending).
   */
  private async judgeEdit(row: StoredRequest, req: ResolveRequest): Promise<RequestEdit | null> {
    if (req.action !== 'approve' || row.kind !== 'approval')
      throw new ApprovalError('invalid_input', 'only an approval carries edited arguments', 'arguments');
    if (req.bypass_secs !== undefined || req.bypass_scope !== undefined)
      throw new ApprovalError(
        'invalid_input',
        'an edited call is approved once: approve it for the session without editing it',
        'bypass_scope',
      );
    if (row.toolName === 'execute_cmd') await initShellParser().catch(() => undefined);
    const rules = await this.rules.ruleSet().catch(() => null);
    if (!rules) throw new ApprovalError('unavailable', 'the rules could not be loaded: the edit was not applied');
    const original = parseArgs(row.arguments);
    const judged = judgeEdit(
      rules,
      {
        toolName: row.toolName,
        original:
          original && typeof original === 'object' && !Array.isArray(original)
            ? (original as Record<string, unknown>)
            : {},
        gateContext: row.gateContext,
        source: row.source,
      },
      req.arguments ?? {},
    );
    switch (judged.kind) {
      case 'refused': {
        // A person reads this: the rule's own note says why, where it has one.
        const rule = judged.ruleId
          ? (await this.rules.list().catch(() => [])).find((r) => r.id === judged.ruleId)
          : null;
        const why = rule?.note ? ` (${rule.note})` : '';
        throw new ApprovalError(judged.code, `${judged.message}${why}`, judged.field);
      }
      case 'unchanged':
        return null;
      case 'accepted':
        return { arguments: JSON.stringify(judged.arguments), diff: judged.diff };
    }
  }

  /** /stop, interrupt, job kill: every pending request of the session ends as cancelled. */
  async cancelSession(actor: Actor, sessionId: string, reason: string): Promise<string[]> {
    const rows = await this.repo.cancelSession({ userId: ownerScope(actor) }, sessionId, reason, actor.userId);
    if (rows.length > 0)
      loggerWithIds(this.log, { userId: actor.userId, sessionId }).info(
        { cancelled: rows.length, reason },
        'pending human requests cancelled',
      );
    for (const r of rows) this.announce(r);
    return rows.map((r) => r.id);
  }

  /** How the answered approvals of these calls of the caller's session were answered (the chat history's cards). */
  async decisions(req: ParsedRequestOf<'approval.decisions'>): Promise<DecisionsReply> {
    const rows = await this.repo.answeredOfCalls({ userId: ownerScope(req.actor) }, req.session_id, req.tool_call_ids);
    return { items: decisionItems(rows) };
  }

  async inbox(actor: Actor): Promise<InboxDto> {
    const rows = await this.repo.pendingOfUser(actor.userId);
    const inbox: InboxDto = { approvals: [], clarifications: [] };
    for (const r of rows) {
      const common = {
        request_id: r.id,
        tool_call_id: r.toolCallId,
        session_id: r.sessionId,
        source: r.source,
        created_at: r.createdAt.toISOString(),
      };
      if (r.kind === 'clarification' && r.question)
        inbox.clarifications.push({
          ...common,
          title: r.question.title,
          question: r.question.question,
          suggested_answers: r.question.suggested_answers ?? [],
        });
      else
        inbox.approvals.push({
          ...common,
          tool_name: r.toolName,
          arguments: parseArgs(r.arguments),
          ...(r.preview ? { preview: r.preview as InboxDto['approvals'][number]['preview'] } : {}),
          ...(r.landsAt !== null ? { lands_at: r.landsAt } : {}),
          ...sessionApproval(callScopes(r), this.sessionApprovalSecs),
        });
    }
    const asking = await this.audit.askingRules(
      inbox.approvals.map((a) => ({ sessionId: a.session_id, toolCallId: a.tool_call_id })),
    );
    for (const a of inbox.approvals) {
      const r = asking.get(a.tool_call_id);
      if (r) a.rule = { id: r.ruleId, name: nameOfRule(r.ruleId, r.ruleName) };
    }
    return inbox;
  }

  private announce(r: StoredRequest): void {
    this.events.resolved(toState(r));
    this.events.userEvent(r.userId, resolvedEvent(r));
  }
}

function targetStatus(row: StoredRequest, req: ResolveRequest): HumanRequestStatus {
  if (row.kind === 'clarification') {
    if (req.action !== 'answer')
      throw new ApprovalError('invalid_input', 'a question is answered, not approved', 'action');
    return 'answered';
  }
  if (req.action === 'answer')
    throw new ApprovalError('invalid_input', 'an approval is approved or rejected', 'action');
  return req.action === 'approve' ? 'approved' : 'rejected';
}

/**
 * A retry of an edit that was applied (same person, same arguments): answered with the state, as
 * the first time, rather than `conflict`.
 */
function sameEditRetried(row: StoredRequest, req: ResolveRequest): boolean {
  if (req.arguments === undefined || row.status !== 'approved' || row.editedArguments === null) return false;
  if (row.actorUserId !== req.actor.userId) return false;
  return canonical(parseArgs(row.editedArguments)) === canonical(req.arguments);
}

function conflict(row: StoredRequest): ApprovalError {
  return new ApprovalError(
    'conflict',
    row.status === 'cancelled' ? 'the request was cancelled' : `the request was already ${row.status}`,
  );
}

function parseArgs(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function toState(r: StoredRequest): HumanRequestState {
  return {
    request_id: r.id,
    tool_call_id: r.toolCallId,
    session_id: r.sessionId,
    status: r.status,
    note: r.note,
    answer: r.answer,
    ...(r.status === 'approved' && r.editedArguments !== null && r.editDiff !== null
      ? { edit: { arguments: parseArgs(r.editedArguments) as Record<string, unknown>, diff: r.editDiff } }
      : {}),
  };
}

function requestedEvent(r: StoredRequest): UserEvent {
  const base = { request_id: r.id, tool_call_id: r.toolCallId, session_id: r.sessionId, source: r.source };
  return r.kind === 'clarification'
    ? { type: 'clarification_requested', ...base, title: r.question?.title ?? '' }
    : { type: 'approval_requested', ...base, tool_name: r.toolName };
}

/**
 * The narrow scopes "approve for this session" opens for a stored request. The stored arguments
 * are the effective ones (working directory injected), so no session working directory is needed.
 */
function callScopes(r: StoredRequest): BypassScope[] {
  const args = parseArgs(r.arguments);
  if (!args || typeof args !== 'object' || Array.isArray(args)) return [];
  return narrowScopes(r.toolName, args as Record<string, unknown>, null);
}

function sessionApproval(
  scopes: BypassScope[],
  secs: number,
): { session_approval?: { scopes: BypassScope[]; secs: number } } {
  return scopes.length > 0 ? { session_approval: { scopes, secs } } : {};
}

function resolvedEvent(r: StoredRequest): UserEvent {
  const base = { request_id: r.id, tool_call_id: r.toolCallId, session_id: r.sessionId, source: r.source };
  if (r.kind === 'clarification') return { type: 'clarification_resolved', ...base };
  return {
    type: 'approval_resolved',
    ...base,
    approved: r.status === 'approved',
    ...(r.status === 'cancelled' ? { cancelled: true } : {}),
    ...decisionOf(r),
  };
}
