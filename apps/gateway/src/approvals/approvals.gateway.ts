import { Injectable } from '@nestjs/common';
import {
  Actor,
  AuditList,
  BypassScope,
  CALL_CONTEXT_MAX,
  InboxDto,
  RequestOf,
  type Role,
  type RuleTestInput,
} from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { ApiError, callService } from '../http/api-error';
import { refuseAdminOnlyFields } from '../http/admin-only';
import { UsersRepository } from '../auth/users.repository';
import { ActionThrottle } from './action-throttle';

/**
 * The gateway's side of approvals: every call carries the verified actor; the approval service
 * scopes by it and answers `not_found` for another user's id. Session ids the approval service
 * cannot check itself (a bypass, a rule test) are checked here with the session worker first.
 */
@Injectable()
export class ApprovalsGateway {
  constructor(
    private readonly bus: Bus,
    private readonly throttle: ActionThrottle,
    private readonly users: UsersRepository,
  ) {}

  /** A push notification's Approve / Reject: counted per address, then redeemed once by the approval service. */
  async redeemAction(req: RequestOf<'approval.action.redeem'>, address: string) {
    const counted = await this.throttle.begin(address);
    const result = await this.call(() => this.bus.call('approval.action.redeem', req));
    await this.throttle.succeeded(counted);
    return result;
  }

  resolve(req: RequestOf<'approval.resolve'>) {
    return this.call(() => this.bus.call('approval.resolve', req));
  }

  /**
   * The inbox, each item with its conversation (title, agent) and, for an approval, the end of what
   * the agent said before the call (`session.call_context`: only the caller's sessions). Without a
   * session worker the items come without it.
   */
  async inbox(actor: Actor): Promise<InboxDto> {
    const inbox = await this.call(() => this.bus.call('approval.inbox', { actor }));
    const context = await this.callContext(actor, [
      ...inbox.approvals.map((a) => ({ session_id: a.session_id, tool_call_id: a.tool_call_id })),
      ...inbox.clarifications.map((c) => ({ session_id: c.session_id })),
    ]);
    const bySession = new Map(context.map((c) => [c.session_id, c]));
    const byCall = new Map(context.flatMap((c) => (c.tool_call_id ? [[c.tool_call_id, c] as const] : [])));
    return {
      approvals: inbox.approvals.map((a) => {
        const s = bySession.get(a.session_id);
        const c = byCall.get(a.tool_call_id);
        return {
          ...a,
          ...(s ? { session_title: s.title, agent: s.agent } : {}),
          ...(c?.context !== undefined ? { context: c.context } : {}),
        };
      }),
      clarifications: inbox.clarifications.map((c) => {
        const s = bySession.get(c.session_id);
        return s ? { ...c, session_title: s.title, agent: s.agent } : c;
      }),
    };
  }

  rules(actor: Actor) {
    return this.call(() => this.bus.call('approval.rules.list', { actor }));
  }

  createRule(req: RequestOf<'approval.rules.create'>) {
    return this.call(() => this.bus.call('approval.rules.create', req));
  }

  updateRule(req: RequestOf<'approval.rules.update'>) {
    return this.call(() => this.bus.call('approval.rules.update', req));
  }

  deleteRule(actor: Actor, id: string) {
    return this.call(() => this.bus.call('approval.rules.delete', { actor, id }));
  }

  /**
   * `POST /api/approval/rules/test`, evaluated as the gate evaluates a call: the rules of the
   * security groups the user's groups bring (and of a session's own group), then the default rules.
   * - With a session of the caller's: what the gate is asked with for a real call of that session's
   *   root agent (`session.gate_context`): its agent, source, security group, RunContext paths,
   *   auto-deny and bypasses, and the owner's groups' security groups; a field sent that differs
   *   from the session's is refused, naming it (400), never silently replaced.
   * - Without one (an admin's question only): the fields sent, as a session of `as_user_id` (that
   *   user's groups and role; an unknown user is 404) or of a member of `as_group_id` alone (404
   *   for an unknown group), or with no group when neither is named.
   * A user may not name a group or another user (403) and must name a session of theirs; another
   * user's session is not found.
   */
  async testRule(actor: Actor, input: RuleTestInput) {
    const { as_user_id, as_group_id, ...req } = input;
    if (actor.role !== 'admin') {
      refuseAdminOnlyFields(actor, req);
      for (const f of ['as_user_id', 'as_group_id'] as const)
        if (input[f] !== undefined) throw new ApiError('forbidden', 'testing rules as another user is for admins', f);
      if (!req.session_id)
        throw new ApiError('forbidden', 'testing rules without a session of yours is for admins', 'session_id');
    }
    if (as_user_id !== undefined && as_group_id !== undefined)
      throw new ApiError('invalid_input', 'test as a user or as a group, not both', 'as_group_id');
    if (!req.session_id) {
      const as = await this.testedAs(actor, as_user_id, as_group_id);
      return this.call(() => this.bus.call('approval.rules.test', { actor, ...req, ...as }));
    }
    for (const f of ['as_user_id', 'as_group_id'] as const)
      if (input[f] !== undefined)
        throw new ApiError(
          'invalid_input',
          `a session is tested as its owner: leave ${f} out, or test without session_id`,
          f,
        );
    const [gc, owner] = await Promise.all([
      this.gateContext(actor, req.session_id),
      this.policy({ actor, user_id: actor.userId }),
    ]);
    const sessions = { agent_id: gc.agent_id, source: gc.source, security_group: gc.security_group ?? undefined };
    for (const f of ['agent_id', 'source', 'security_group'] as const)
      if (req[f] !== undefined && req[f] !== sessions[f])
        throw new ApiError(
          'invalid_input',
          `session ${req.session_id} runs with ${f} ${sessions[f] ?? '(none)'}: a test of a session uses the session's own; leave ${f} out, or test without session_id`,
          f,
        );
    return this.call(() =>
      this.bus.call('approval.rules.test', {
        actor,
        tool_name: req.tool_name,
        arguments: req.arguments,
        session_id: req.session_id,
        ...sessions,
        security_groups: owner.security_groups,
        run_context: gc.run_context,
        auto_deny: gc.auto_deny,
      }),
    );
  }

  /** The security groups and role a test without a session evaluates with (see `testRule`). */
  private async testedAs(
    actor: Actor,
    userId: string | undefined,
    groupId: string | undefined,
  ): Promise<{ security_groups?: string[]; owner_role?: Role }> {
    if (userId !== undefined) {
      const user = await this.users.findById(userId);
      if (!user) throw new ApiError('not_found', 'user not found', 'as_user_id');
      const p = await this.policy({ actor, user_id: userId });
      return { security_groups: p.security_groups, owner_role: user.role };
    }
    if (groupId !== undefined) {
      try {
        return {
          security_groups: (await this.policy({ actor, group_id: groupId })).security_groups,
          owner_role: 'user',
        };
      } catch (e) {
        if (e instanceof RemoteError && e.body.code === 'not_found')
          throw new ApiError('not_found', 'group not found', 'as_group_id');
        throw e;
      }
    }
    return {};
  }

  private policy(req: RequestOf<'groups.policy'>) {
    return callService('no session worker is available; retry shortly', () => this.bus.call('groups.policy', req));
  }

  tools(actor: Actor) {
    return this.call(() => this.bus.call('approval.tools', { actor }));
  }

  /** A page of the audit, each row with its conversation's title (null when untitled or gone). */
  async audit(req: RequestOf<'approval.audit'>): Promise<AuditList> {
    const page = await this.call(() => this.bus.call('approval.audit', req));
    const sessions = [...new Set(page.items.flatMap((i) => (i.session_id ? [i.session_id] : [])))];
    const titles = new Map(
      (
        await this.callContext(
          req.actor,
          sessions.map((session_id) => ({ session_id })),
        )
      ).map((c) => [c.session_id, c.title]),
    );
    return {
      has_more: page.has_more,
      items: page.items.map((i) => ({ ...i, session_title: i.session_id ? (titles.get(i.session_id) ?? null) : null })),
    };
  }

  /** The conversations of these calls (the caller's only); nothing when the session worker cannot answer. */
  private async callContext(actor: Actor, items: RequestOf<'session.call_context'>['items']) {
    if (items.length === 0) return [];
    try {
      return (await this.bus.call('session.call_context', { actor, items: items.slice(0, CALL_CONTEXT_MAX) })).items;
    } catch {
      return [];
    }
  }

  bypasses(actor: Actor, sessionId: string | undefined) {
    return this.call(() => this.bus.call('approval.bypasses.list', { actor, session_id: sessionId }));
  }

  async openBypass(actor: Actor, sessionId: string, scope: BypassScope, secs: number | undefined) {
    await this.assertSession(actor, sessionId);
    return this.call(() => this.bus.call('approval.bypasses.create', { actor, session_id: sessionId, scope, secs }));
  }

  revokeBypass(actor: Actor, id: string) {
    return this.call(() => this.bus.call('approval.bypasses.delete', { actor, id }));
  }

  /** What the gate is asked with for the caller's session; not_found for another user's session. */
  private async gateContext(actor: Actor, sessionId: string) {
    try {
      return await callService('no session worker is available; retry shortly', () =>
        this.bus.call('session.gate_context', { actor, session_id: sessionId }),
      );
    } catch (e) {
      if (e instanceof RemoteError && e.body.code === 'not_found') throw new ApiError('not_found', 'session not found');
      throw e;
    }
  }

  /** The session is the caller's (the session worker answers not_found otherwise). */
  private async assertSession(actor: Actor, sessionId: string): Promise<void> {
    try {
      await this.bus.call('session.replay', { actor, session_id: sessionId });
    } catch (e) {
      if (e instanceof RemoteError && e.body.code === 'not_found') throw new ApiError('not_found', 'session not found');
      throw e;
    }
  }

  /** No approval service answering → 503 with Retry-After. */
  private call<T>(fn: () => Promise<T>): Promise<T> {
    return callService('the approval service is not available; retry shortly', fn);
  }
}
