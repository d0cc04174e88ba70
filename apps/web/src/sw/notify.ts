import type { PushMessage } from '@skald/contracts/push-message';

/** What a notification keeps for its click: the message it shows and where a tap opens. */
export interface NotificationData {
  message: PushMessage;
  url: string;
}

/** The REST route an approval's action token is posted to (it is the credential; no session goes with it). */
export const ACTION_PATH = '/api/approvals/actions';

const ACTIONS = [
  { action: 'approve', title: 'Approve' },
  { action: 'reject', title: 'Reject' },
] as const;

/**
 * How a push message is shown. An approval with a token offers Approve and Reject; once one was
 * taken (`taken`), the same tag shows what was decided, with no buttons.
 */
export function notificationFor(
  message: PushMessage,
  taken?: string,
): { title: string; options: NotificationOptions & { actions?: Array<{ action: string; title: string }> } } {
  const data: NotificationData = { message, url: message.url };
  const decided = taken === 'approve' ? 'Approved' : taken === 'reject' ? 'Rejected' : null;
  return {
    title: decided ? `${decided}: ${message.title}` : message.title,
    options: {
      body: message.body,
      tag: message.tag,
      data,
      icon: '/assets/icon-192.png',
      badge: '/assets/icon-192.png',
      requireInteraction: !decided && (message.kind === 'approval' || message.kind === 'question'),
      ...(message.action_token && !decided ? { actions: [...ACTIONS] } : {}),
    },
  };
}

/** The request an action button makes: only Approve or Reject of a message that carries a token. */
export function actionRequest(data: NotificationData, action: string): { url: string; init: RequestInit } | null {
  const token = data.message.action_token;
  if (!token || !ACTIONS.some((a) => a.action === action)) return null;
  return {
    url: ACTION_PATH,
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ token, action }),
      credentials: 'omit',
    },
  };
}
