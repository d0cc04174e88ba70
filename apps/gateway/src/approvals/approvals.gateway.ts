import { Injectable } from '@nestjs/common';
import { Actor, BypassScope, RequestOf } from '@skald/contracts';
import { Bus, RemoteError } from '@skald/messaging';
import { ApiError, callService } from '../http/api-error';
import { refuseAdminOnlyFields } from '../http/admin-only';

/**
 * The gateway's side of approvals: every call carries the verified actor; the approval service
 * scopes by it and answers `not_found` for another user's id. Session ids the approval service
 * cannot check itself (a bypass, a rule test) are checked here with the session worker first.
 */
@Injectable()
export class ApprovalsGateway {
  constructor(private readonly bus: Bus) {}

  resolve(req: RequestOf<'approval.resolve'>) {
    return this.call(() => this.bus.call('approval.resolve', req));
  }

  inbox(actor: Actor) {
    return this.call(() => this.bus.call('approval.inbox', { actor }));
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
   * `POST /api/approval/rules/test`. An admin tests any group, agent and source. A user tests only
   * what their own session would get: no `security_group` of their choosing (403, the same check
   * as every RunContext), a session of theirs required, and the group is the one an admin set on
   * that session (none: the org-wide rules only). Another user's session is not found.
   */
  async testRule(req: RequestOf<'approval.rules.test'>) {
    if (req.actor.role === 'admin') {
      if (req.session_id) await this.assertSession(req.actor, req.session_id);
      return this.call(() => this.bus.call('approval.rules.test', req));
    }
    refuseAdminOnlyFields(req.actor, req);
    if (!req.session_id)
      throw new ApiError('forbidden', 'testing rules without a session of yours is for admins', 'session_id');
    const rc = await this.sessionRunContext(req.actor, req.session_id);
    const { security_group: _ignored, ...rest } = req;
    return this.call(() =>
      this.bus.call('approval.rules.test', {
        ...rest,
        ...(rc.security_group !== null ? { security_group: rc.security_group } : {}),
      }),
    );
  }

  tools(actor: Actor) {
    return this.call(() => this.bus.call('approval.tools', { actor }));
  }

  audit(req: RequestOf<'approval.audit'>) {
    return this.call(() => this.bus.call('approval.audit', req));
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

  /** The caller's session's RunContext (its security group); not_found for another user's session. */
  private async sessionRunContext(actor: Actor, sessionId: string) {
    try {
      return await callService('no session worker is available; retry shortly', () =>
        this.bus.call('session.run_context.get', { actor, session_id: sessionId }),
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
