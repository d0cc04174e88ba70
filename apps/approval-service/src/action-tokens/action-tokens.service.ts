import { createHash, randomBytes } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { ActionTokenMinted, ApprovalActionResult, ParsedRequestOf } from '@skald/contracts';
import { ApprovalError, requestNotFound } from '../errors';
import { RequestsRepository, StoredRequest } from '../requests/requests.repository';
import { RequestsService } from '../requests/requests.service';
import { ActionTokensRepository } from './action-tokens.repository';

/** How long a token acts: a notification read a quarter of an hour later opens the app instead. */
export const ACTION_TOKEN_TTL_MS = 15 * 60_000;

/** The one answer for a token that cannot act, whatever the reason (unknown, used, expired, the call changed). */
export const tokenRefused = (): ApprovalError =>
  new ApprovalError(
    'forbidden',
    'this notification can no longer answer the request (used, expired, or the call changed); open Skald to answer it',
  );

const sha256 = (text: string): string => createHash('sha256').update(text).digest('hex');

/** The token's lookup key: the raw token is never stored. */
export const tokenHashOf = (token: string): string => sha256(`skald-action-token\0${token}`);

/** What a token is bound to: the tool and the arguments, byte for byte, of the call it was minted for. */
export function callHashOf(r: Pick<StoredRequest, 'toolName' | 'arguments'>): string {
  return sha256(`${r.toolName}\0${r.arguments}`);
}

/**
 * Action tokens: what lets a push notification's Approve and Reject answer one pending call
 * without a session credential. Minted per push delivery (the scheduler asks), 32 random bytes,
 * stored by hash; redeemed once (one UPDATE decides), within 15 minutes, for the one call whose
 * tool and arguments it was minted for, as the user it was minted for, through the normal resolve
 * path (first answer wins, the audit names the user and the channel `push`).
 */
@Injectable()
export class ActionTokensService {
  constructor(
    private readonly tokens: ActionTokensRepository,
    private readonly requests: RequestsRepository,
    private readonly resolver: RequestsService,
  ) {}

  async mint(req: ParsedRequestOf<'approval.action_token.mint'>): Promise<ActionTokenMinted> {
    const row = await this.requests.findById({ userId: req.user_id }, req.request_id);
    if (!row || row.kind !== 'approval') throw requestNotFound();
    if (row.status !== 'pending') throw new ApprovalError('conflict', `the request was already ${row.status}`);
    const token = randomBytes(32).toString('base64url');
    const expiresAt = await this.tokens.insert({
      tokenHash: tokenHashOf(token),
      requestId: row.id,
      userId: row.userId,
      callHash: callHashOf(row),
      ttlMs: ACTION_TOKEN_TTL_MS,
    });
    await this.tokens.sweep().catch(() => undefined);
    return { token, expires_at: expiresAt.toISOString() };
  }

  async redeem(req: ParsedRequestOf<'approval.action.redeem'>): Promise<ApprovalActionResult> {
    const used = await this.tokens.use(tokenHashOf(req.token));
    if (!used) throw tokenRefused();
    const row = await this.requests.findById({ userId: used.user_id }, used.request_id);
    if (!row || row.kind !== 'approval' || callHashOf(row) !== used.call_hash) throw tokenRefused();
    const state = await this.resolver.resolve({
      actor: { userId: used.user_id, role: 'user' },
      request_id: row.id,
      action: req.action,
      channel: 'push',
    });
    return { status: state.status === 'approved' ? 'approved' : 'rejected', tool_name: row.toolName };
  }
}
