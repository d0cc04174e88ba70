/// <reference lib="webworker" />
// The web client's service worker: the app's shell from the cache when the server cannot be reached
// (workbox-precaching, its file list injected at build by vite-plugin-pwa), and Web Push messages
// shown as notifications; an approval's Approve and Reject post its action token, nothing else.
import { readPushMessage } from '@skald/contracts/push-message';
import { cleanupOutdatedCaches, matchPrecache, precacheAndRoute } from 'workbox-precaching';
import { NavigationRoute, registerRoute } from 'workbox-routing';
import { actionRequest, notificationFor, type NotificationData } from './notify';

declare const self: ServiceWorkerGlobalScope & { __WB_MANIFEST: Array<{ url: string; revision: string | null }> };

/** How long the page may take from the network before the cached copy is shown instead. */
const PAGE_TIMEOUT_MS = 4000;

// The one page of the app: from the network, else (no answer within PAGE_TIMEOUT_MS, or none at all) the copy
// cached at install, whose files are cached with it.
registerRoute(
  new NavigationRoute(
    async ({ request }) => {
      try {
        return await fetch(request, { signal: AbortSignal.timeout(PAGE_TIMEOUT_MS) });
      } catch {
        return (await matchPrecache('/')) ?? Response.error();
      }
    },
    { allowlist: [/^\/$/] },
  ),
);

// Every other file of the build from the cache kept at install (their names carry a content hash). Registered after
// the page's route: the first route that matches answers, and the page must come from the network when it can (a
// cached page after a deploy would ask for files the server no longer has).
cleanupOutdatedCaches();
precacheAndRoute(self.__WB_MANIFEST);

self.addEventListener('install', () => void self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));

self.addEventListener('push', (event) => {
  let value: unknown = null;
  try {
    value = event.data?.json() ?? null;
  } catch {
    value = null;
  }
  const message = readPushMessage(value);
  if (!message) return;
  const n = notificationFor(message);
  event.waitUntil(self.registration.showNotification(n.title, n.options));
});

/** Focuses a window of the app already open on `url`'s origin and sends it there, else opens one. */
async function openApp(url: string): Promise<void> {
  const target = new URL(url, self.location.origin).href;
  const windows = await self.clients.matchAll({ type: 'window', includeUncontrolled: true });
  const open = windows.find((w) => new URL(w.url).origin === self.location.origin);
  if (open) {
    await open.focus();
    await open.navigate(target).catch(() => undefined);
    return;
  }
  await self.clients.openWindow(target);
}

self.addEventListener('notificationclick', (event) => {
  event.notification.close();
  const data = event.notification.data as NotificationData;
  const request = actionRequest(data, event.action);
  event.waitUntil(
    (async () => {
      if (!request) return openApp(data.url);
      const res = await fetch(request.url, request.init).catch(() => null);
      if (res?.ok) {
        const done = notificationFor({ ...data.message, action_token: undefined }, event.action);
        await self.registration.showNotification(done.title, done.options);
        return;
      }
      // an expired or used token, or no network: the person decides in the app
      await openApp(data.url);
    })(),
  );
});
