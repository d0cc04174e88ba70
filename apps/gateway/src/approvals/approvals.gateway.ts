import { Injectable } from '@nestjs/common';
import { Actor, BypassScope, RequestOf } from '@skald/contracts';
import { Bus } from '@skald/messaging';
import { RemoteError } from '@skald/messaging/bus-errors';
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
   * `POST /api/approval/rules/test`. Without a session (an admin's question only) the fields sent
   * are the inputs. With a session of the caller's, the test is evaluated with what the gate is
   * asked with for a real call of that session's root agent (`session.gate_context`): its agent,
   * source, security group, RunContext paths and auto-deny, and its bypasses; a field sent that
   * differs from the session's is refused, naming it (400), never silently replaced. A user may not
   * name a group (403, the same check as every RunContext) and must name a session of theirs;
   * another user's session is not found.
   */
  async testRule(req: RequestOf<'approval.rules.test'>) {
    if (req.actor.role !== 'admin') {
      refuseAdminOnlyFields(req.actor, req);
      if (!req.session_id)
        throw new ApiError('forbidden', 'testing rules without a session of yours is for admins', 'session_id');
    }
    if (!req.session_id) return this.call(() => this.bus.call('approval.rules.test', req));
    const gc = await this.gateContext(req.actor, req.session_id);
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
        actor: req.actor,
        tool_name: req.tool_name,
        arguments: req.arguments,
        session_id: req.session_id,
        ...sessions,
        run_context: gc.run_context,
        auto_deny: gc.auto_deny,
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
