import { Injectable } from '@nestjs/common';
import { Actor, BypassScope, RequestOf } from '@skald/contracts';
import { Bus, RemoteError } from '@skald/messaging';
import { ApiError, callService } from '../http/api-error';

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

  async testRule(req: RequestOf<'approval.rules.test'>) {
    if (req.session_id) await this.assertSession(req.actor, req.session_id);
    return this.call(() => this.bus.call('approval.rules.test', req));
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
