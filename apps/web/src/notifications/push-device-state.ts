import type { PushKeyDto, PushSubscribed, PushSubscriptionDto } from '@skald/contracts';
import type { Api } from '../api';

/** What "Push notifications on this device" shows. */
export type PushDeviceState =
  | { kind: 'checking' }
  /** No service worker or PushManager here (an old browser, a dev build, iOS outside the home screen). */
  | { kind: 'unsupported' }
  /** The server has no VAPID key: push is off for the deployment. */
  | { kind: 'server-off' }
  /** The person blocked notifications for this site; only the browser's settings can undo it. */
  | { kind: 'blocked' }
  | { kind: 'off' }
  | { kind: 'on'; subscriptionId: string };

/** The `applicationServerKey` of a base64url VAPID public key. */
export function keyBytes(base64url: string): Uint8Array<ArrayBuffer> {
  const b64 = base64url.replace(/-/g, '+').replace(/_/g, '/');
  const raw = atob(b64 + '='.repeat((4 - (b64.length % 4)) % 4));
  const out = new Uint8Array(new ArrayBuffer(raw.length));
  for (let i = 0; i < raw.length; i++) out[i] = raw.charCodeAt(i);
  return out;
}

/** A short label for this device in the owner's list: the browser and the system, never the whole user agent. */
export function deviceLabel(userAgent: string): string {
  const browser = /Edg\//.test(userAgent)
    ? 'Edge'
    : /Firefox\//.test(userAgent)
      ? 'Firefox'
      : /Chrome\//.test(userAgent)
        ? 'Chrome'
        : /Safari\//.test(userAgent)
          ? 'Safari'
          : 'A browser';
  const system = /Android/.test(userAgent)
    ? 'Android'
    : /iPhone|iPad/.test(userAgent)
      ? 'iOS'
      : /Mac OS X/.test(userAgent)
        ? 'macOS'
        : /Windows/.test(userAgent)
          ? 'Windows'
          : /Linux/.test(userAgent)
            ? 'Linux'
            : '';
  return system ? `${browser} on ${system}` : browser;
}

const PATH = '/api/notifications/push/subscriptions';

function supported(): boolean {
  return 'serviceWorker' in navigator && 'PushManager' in window && 'Notification' in window;
}

async function currentSubscription(): Promise<PushSubscription | null> {
  const reg = await navigator.serviceWorker.getRegistration('/');
  return (await reg?.pushManager.getSubscription()) ?? null;
}

/** This device's state: the browser's subscription, matched against the caller's list on the server. */
export async function readState(api: Api): Promise<PushDeviceState> {
  if (!supported()) return { kind: 'unsupported' };
  const key = await api.get<PushKeyDto>('/api/notifications/push/key');
  if (!key.public_key) return { kind: 'server-off' };
  if (Notification.permission === 'denied') return { kind: 'blocked' };
  const sub = await currentSubscription();
  if (!sub) return { kind: 'off' };
  const list = await api.get<{ items: PushSubscriptionDto[] }>(PATH);
  const mine = list.items.find((s) => s.endpoint === sub.endpoint);
  return mine ? { kind: 'on', subscriptionId: mine.id } : { kind: 'off' };
}

/** Asks for permission, subscribes with the deployment's key and tells the server (idempotent on the endpoint). */
export async function enable(api: Api): Promise<PushDeviceState> {
  if (!supported()) return { kind: 'unsupported' };
  const key = await api.get<PushKeyDto>('/api/notifications/push/key');
  if (!key.public_key) return { kind: 'server-off' };
  const permission = await Notification.requestPermission();
  if (permission === 'denied') return { kind: 'blocked' };
  if (permission !== 'granted') return { kind: 'off' };
  const reg = await navigator.serviceWorker.ready;
  const sub =
    (await reg.pushManager.getSubscription()) ??
    (await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: keyBytes(key.public_key) }));
  const json = sub.toJSON();
  const made = await api.post<PushSubscribed>(PATH, {
    endpoint: json.endpoint,
    keys: { p256dh: json.keys?.p256dh, auth: json.keys?.auth },
    user_agent: deviceLabel(navigator.userAgent),
  });
  return { kind: 'on', subscriptionId: made.subscription.id };
}

/** Removes this device's subscription on the server, then in the browser. */
export async function disable(api: Api, subscriptionId: string): Promise<PushDeviceState> {
  await api.delete(`${PATH}/${encodeURIComponent(subscriptionId)}`);
  await (await currentSubscription())?.unsubscribe();
  return { kind: 'off' };
}
