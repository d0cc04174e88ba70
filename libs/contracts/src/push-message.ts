/**
 * What a Web Push message carries to the web client's service worker (zod-free: the worker is bundled
 * without zod). The server encrypts it for one subscription (RFC 8291); the worker shows it as a
 * notification and, for an approval, offers Approve and Reject, which post the action token.
 */
export interface PushMessage {
  /** What needs the person: an approval or a question waiting, a job that needs a human or ended, a turn that ended. */
  kind: 'approval' | 'question' | 'job' | 'turn';
  title: string;
  body: string;
  /** Where a tap opens: a path of the client's own origin (the conversation, the inbox). */
  url: string;
  /** One notification per thing: a later message with the same tag replaces the earlier one. */
  tag: string;
  /** An approval's action token: short-lived, single-use, bound to that one call; never a session credential. */
  action_token?: string;
}

export const PUSH_MESSAGE_KINDS: readonly PushMessage['kind'][] = ['approval', 'question', 'job', 'turn'];

/** Bounds of each field, in UTF-16 code units. */
export const PUSH_MESSAGE_LIMITS = { title: 200, body: 1000, url: 2048, tag: 200, action_token: 512 } as const;

const text = (v: unknown, max: number): v is string => typeof v === 'string' && v.length > 0 && v.length <= max;

/** A path of this origin: one leading slash, never `//host` or a backslash a browser reads as one. */
function ownPath(v: unknown): v is string {
  return text(v, PUSH_MESSAGE_LIMITS.url) && /^\/(?![/\\])/.test(v) && !/[\\\s]/.test(v);
}

/** The message when `value` is a well-formed one, else null (the worker then shows nothing it was not meant to). */
export function readPushMessage(value: unknown): PushMessage | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const v = value as Record<string, unknown>;
  if (!PUSH_MESSAGE_KINDS.includes(v.kind as PushMessage['kind'])) return null;
  if (!text(v.title, PUSH_MESSAGE_LIMITS.title) || !text(v.body, PUSH_MESSAGE_LIMITS.body)) return null;
  if (!ownPath(v.url) || !text(v.tag, PUSH_MESSAGE_LIMITS.tag)) return null;
  if (v.action_token !== undefined) {
    if (v.kind !== 'approval' || !text(v.action_token, PUSH_MESSAGE_LIMITS.action_token)) return null;
    if (!/^[\w-]+(\.[\w-]+)*$/.test(v.action_token)) return null;
  }
  const message: PushMessage = {
    kind: v.kind as PushMessage['kind'],
    title: v.title,
    body: v.body,
    url: v.url,
    tag: v.tag,
  };
  if (typeof v.action_token === 'string') message.action_token = v.action_token;
  return message;
}
