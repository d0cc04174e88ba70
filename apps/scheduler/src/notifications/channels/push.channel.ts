import { generateRequestDetails } from 'web-push';
import { PUSH_MESSAGE_LIMITS, type NotificationKind, type PushMessage } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import type { AttemptResult } from '../delivery-rules';
import type { VapidKeys } from '../vapid';
import {
  describeError,
  DeliveryTarget,
  failedAttempt,
  NotificationChannel,
  OutgoingNotification,
  postOnce,
} from './notification-channel';

/** What minting an approval's action token came to. */
export type MintResult =
  | { kind: 'minted'; token: string }
  /** The request is no longer pending (answered, cancelled) or not the user's: nothing to push. */
  | { kind: 'gone'; reason: string };

/** The approval service's side: a fresh action token per push of an approval (`approval.action_token.mint`). */
export interface ActionTokenPort {
  /** Throws when the approval service could not be asked (the attempt is retried). */
  mint(requestId: string, userId: string): Promise<MintResult>;
}

export interface PushChannelOptions {
  /** Null: push is off (no SKALD_VAPID_PRIVATE_KEY). */
  vapid: VapidKeys | null;
  /** VAPID `sub`: how the push service reaches the operator. */
  subject: string;
  /** How long the push service keeps a push for an offline device, in seconds. */
  ttlS: number;
  /** The SSRF guard, checked at every connection; http only for allow-listed hosts. */
  policy: AddressPolicy;
  timeoutMs: number;
  tokens: ActionTokenPort;
}

const TITLES: Record<NotificationKind, string> = {
  approval_requested: 'Approval needed',
  question_asked: 'A question for you',
  job_needs_human: 'A job needs you',
  job_finished: 'Job finished',
  turn_finished: 'Reply ready',
};

const MESSAGE_KIND: Record<NotificationKind, PushMessage['kind']> = {
  approval_requested: 'approval',
  question_asked: 'question',
  job_needs_human: 'job',
  job_finished: 'job',
  turn_finished: 'turn',
};

/** Waiting for a human: the push service should wake the device now; an ending can wait for it. */
const URGENCY: Record<NotificationKind, 'high' | 'normal'> = {
  approval_requested: 'high',
  question_asked: 'high',
  job_needs_human: 'high',
  job_finished: 'normal',
  turn_finished: 'normal',
};

const clip = (s: string, max: number): string => (s.length > max ? `${s.slice(0, max - 1)}…` : s);

/** The path of the client page a link opens (the worker opens paths of its own origin only). */
function pathOf(link: string): string {
  try {
    const u = new URL(link);
    return `${u.pathname}${u.search}${u.hash}`;
  } catch {
    return '/';
  }
}

/**
 * The push message (the `PushMessage` contract the service worker reads) of a notification: the
 * action token only on an approval. One notification per thing: the tag is the request's, the
 * run's or the notification's own id.
 */
export function pushMessageOf(n: OutgoingNotification, actionToken?: string): PushMessage {
  const kind = MESSAGE_KIND[n.kind];
  const thing = n.refs.request_id ?? n.refs.run_id ?? n.refs.session_id ?? n.deliveryId;
  const message: PushMessage = {
    kind,
    title: clip(TITLES[n.kind], PUSH_MESSAGE_LIMITS.title),
    body: clip(n.summary.trim() || TITLES[n.kind], PUSH_MESSAGE_LIMITS.body),
    url: clip(pathOf(n.link), PUSH_MESSAGE_LIMITS.url),
    tag: clip(`skald-${n.kind}-${thing}`, PUSH_MESSAGE_LIMITS.tag),
  };
  if (kind === 'approval' && actionToken) message.action_token = actionToken;
  return message;
}

/**
 * Web Push (RFC 8030) with `web-push`: the payload encrypted to the subscription's keys (RFC 8291,
 * aes128gcm) and the request signed with the deployment's VAPID key (RFC 8292), then posted
 * through the guarded fetch, so an endpoint that is or starts to resolve to a private address is
 * refused at connect time. An approval's push carries a freshly minted action token.
 */
export class PushChannel implements NotificationChannel<'push'> {
  readonly name = 'push' as const;
  readonly enabled: boolean;
  private readonly fetch: typeof fetch;

  constructor(private readonly options: PushChannelOptions) {
    this.enabled = options.vapid !== null;
    this.fetch = options.policy.guardedFetch();
  }

  async attempt(
    n: OutgoingNotification,
    target: Extract<DeliveryTarget, { channel: 'push' }>,
    signal: AbortSignal,
  ): Promise<AttemptResult> {
    const vapid = this.options.vapid;
    if (!vapid) return { kind: 'permanent', error: 'push is not configured (SKALD_VAPID_PRIVATE_KEY)' };
    const refused = endpointRefusal(target.endpoint, this.options.policy);
    if (refused) return { kind: 'permanent', error: refused };
    try {
      // before a token is minted for it (the connection checks the address it connects to again)
      await this.options.policy.checkUrl(new URL(target.endpoint));
    } catch (e) {
      return failedAttempt(e, 'the push endpoint could not be resolved');
    }
    let token: string | undefined;
    if (n.kind === 'approval_requested' && n.refs.request_id) {
      let minted: MintResult;
      try {
        minted = await this.options.tokens.mint(n.refs.request_id, n.userId);
      } catch (e) {
        return { kind: 'transient', error: `no action token: ${describeError(e)}` };
      }
      if (minted.kind === 'gone') return { kind: 'permanent', error: minted.reason };
      token = minted.token;
    }
    let request: ReturnType<typeof generateRequestDetails>;
    try {
      request = generateRequestDetails(
        { endpoint: target.endpoint, keys: { p256dh: target.p256dh, auth: target.auth } },
        JSON.stringify(pushMessageOf(n, token)),
        {
          vapidDetails: { subject: this.options.subject, publicKey: vapid.publicKey, privateKey: vapid.privateKey },
          TTL: this.options.ttlS,
          urgency: URGENCY[n.kind],
          contentEncoding: 'aes128gcm',
        },
      );
    } catch (e) {
      return { kind: 'permanent', error: `the push could not be encrypted: ${describeError(e)}` };
    }
    const headers: Record<string, string> = {};
    for (const [k, v] of Object.entries(request.headers))
      if (k.toLowerCase() !== 'content-length') headers[k] = String(v);
    const sent = await postOnce(
      this.fetch,
      request.endpoint,
      { headers, body: request.body ?? undefined },
      signal,
      this.options.timeoutMs,
    );
    if (!('status' in sent)) return sent;
    const { status } = sent;
    if (status >= 200 && status < 300) return { kind: 'delivered', responseCode: status };
    if (status === 404 || status === 410)
      return {
        kind: 'permanent',
        error: `HTTP ${status}: the subscription is gone`,
        responseCode: status,
        targetGone: true,
      };
    if (status >= 300 && status < 400)
      return { kind: 'permanent', error: `HTTP ${status}: redirects are not followed`, responseCode: status };
    return { kind: 'transient', error: `HTTP ${status}`, responseCode: status };
  }
}

/**
 * Why a push endpoint may not be used, or null: https only, plain http for a host the operator
 * allow-listed (SKALD_WEBHOOK_ALLOW_HOSTS); the address itself is checked at connect time.
 */
export function endpointRefusal(endpoint: string, policy: AddressPolicy): string | null {
  let url: URL;
  try {
    url = new URL(endpoint);
  } catch {
    return 'the push endpoint is not a URL';
  }
  if (url.username || url.password) return 'a push endpoint carries no credentials';
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && policy.listed(url.hostname)) return null;
  return 'a push endpoint must be https (plain http only for hosts in SKALD_WEBHOOK_ALLOW_HOSTS)';
}
