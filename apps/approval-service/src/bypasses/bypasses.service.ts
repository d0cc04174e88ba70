import { Injectable, OnModuleDestroy, OnModuleInit } from '@nestjs/common';
import { Actor, BypassDto } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { ApprovalError } from '../errors';
import { ApprovalEventsPublisher } from '../events/approval-events.publisher';
import { BypassScope } from '../rules/gate-input';
import { BypassesRepository } from './bypasses.repository';

/** Admins see and revoke every user's bypasses; a user only their own. */
export const ownerScope = (actor: Actor): string | null => (actor.role === 'admin' ? null : actor.userId);

/**
 * Session bypasses: opened only by a human (an approval with `bypass_secs`, or REST — both come
 * from a verified actor through the gateway; nothing the model sends reaches here), ended by
 * expiry, revocation or a session reset. A Deny is never bypassed (see `relax`).
 *
 * Postgres is the truth and an active bypass is always read from it (so a revocation or an
 * expiry holds at once everywhere). Only "this session has no bypass" is remembered, for at most
 * NEGATIVE_TTL_MS, and forgotten on every replica when one is opened (`approval.bypass.opened`,
 * published before the session is woken) and at every NATS connection gap (a broadcast sent in the
 * gap never arrives); a read that began before a forgetting does not remember its answer (it may
 * predate the bypass). A lost broadcast can only make the gate ask once more.
 */
@Injectable()
export class BypassesService implements OnModuleInit, OnModuleDestroy {
  private static readonly NEGATIVE_TTL_MS = 1000;
  private static readonly NEGATIVE_MAX = 50_000;
  private readonly none = new Map<string, number>();
  /** Bumped at every forgetting: a read that began under an older one keeps nothing. */
  private generation = 0;
  private unwatchGaps: (() => void) | null = null;

  constructor(
    private readonly repo: BypassesRepository,
    private readonly bus: Bus,
    private readonly events: ApprovalEventsPublisher,
  ) {}

  onModuleInit(): void {
    this.bus.subscribe('approvalBypassOpened', (m) => {
      this.forget(m.session_id);
    });
    this.unwatchGaps = this.bus.onConnectionGap(() => this.forget(null));
  }

  onModuleDestroy(): void {
    this.unwatchGaps?.();
    this.unwatchGaps = null;
  }

  /** Forgets that `sessionId` (null: every session) has no bypass. */
  private forget(sessionId: string | null): void {
    this.generation++;
    if (sessionId === null) this.none.clear();
    else this.none.delete(sessionId);
  }

  async activeScopes(sessionId: string): Promise<BypassScope[]> {
    const until = this.none.get(sessionId);
    if (until !== undefined && until > Date.now()) return [];
    const generation = this.generation;
    const scopes = await this.repo.activeScopes(sessionId);
    if (generation !== this.generation) return scopes;
    if (scopes.length === 0) {
      if (this.none.size >= BypassesService.NEGATIVE_MAX) this.none.clear();
      this.none.set(sessionId, Date.now() + BypassesService.NEGATIVE_TTL_MS);
    } else this.none.delete(sessionId);
    return scopes;
  }

  /** After a bypass was committed (here or by a resolution). */
  opened(sessionId: string): void {
    this.forget(sessionId);
    this.events.bypassOpened(sessionId);
  }

  /** The gateway has checked that the session is the caller's (or the caller is an admin). */
  async open(actor: Actor, sessionId: string, scope: BypassScope, secs: number | undefined): Promise<string> {
    const id = await this.repo.create({ sessionId, userId: actor.userId, createdBy: actor.userId, scope, secs });
    this.opened(sessionId);
    return id;
  }

  async list(actor: Actor, sessionId: string | undefined): Promise<BypassDto[]> {
    const rows = await this.repo.listActive({ userId: ownerScope(actor), sessionId });
    return rows.map((b) => ({
      id: b.id,
      session_id: b.sessionId,
      scope: b.scope,
      ...(b.expiresAt ? { expires_at: b.expiresAt.toISOString() } : {}),
      created_at: b.createdAt.toISOString(),
    }));
  }

  async revoke(actor: Actor, id: string): Promise<void> {
    if (!(await this.repo.revoke({ userId: ownerScope(actor), id })))
      throw new ApprovalError('not_found', 'no such bypass');
  }

  revokeSession(actor: Actor, sessionId: string): Promise<number> {
    return this.repo.revokeSession({ userId: ownerScope(actor), sessionId });
  }
}
