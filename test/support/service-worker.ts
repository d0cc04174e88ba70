import type { Browser, BrowserContext, Page } from 'playwright-core';
import { until } from './until';

/** A page of the web client whose service worker is registered, and a way to push to that worker. */
export interface WorkerPage {
  ctx: BrowserContext;
  page: Page;
  /** Delivers a push message to the page's service worker (DevTools protocol), as a push service would. */
  deliver(data: string): Promise<unknown>;
}

/**
 * Opens the web client at 1280 px with notifications granted and waits (bounded by `readyMs`) until
 * its service worker is registered: a page that never registers one fails here, naming it.
 */
export async function openWithServiceWorker(
  browser: Browser,
  gatewayUrl: string,
  readyMs = 60_000,
): Promise<WorkerPage> {
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  await ctx.grantPermissions(['notifications'], { origin: gatewayUrl });
  const page = await ctx.newPage();
  const cdp = await ctx.newCDPSession(page);
  const registrations: Array<{ registrationId: string; scopeURL: string }> = [];
  cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: typeof registrations }) =>
    registrations.push(...e.registrations),
  );
  await cdp.send('ServiceWorker.enable');
  await page.goto(gatewayUrl);
  await page.evaluate(async (ms) => {
    const nav = (globalThis as unknown as { navigator: { serviceWorker: { ready: Promise<unknown> } } }).navigator;
    const late = new Promise((_, reject) =>
      setTimeout(() => reject(new Error(`the page registered no service worker within ${ms / 1000} s`)), ms),
    );
    await Promise.race([nav.serviceWorker.ready, late]);
  }, readyMs);
  const registrationId = await until(
    'the worker registration',
    async () => registrations.find((x) => x.scopeURL === `${gatewayUrl}/`)?.registrationId ?? null,
    readyMs,
  );
  return {
    ctx,
    page,
    deliver: (data) => cdp.send('ServiceWorker.deliverPushMessage', { origin: gatewayUrl, registrationId, data }),
  };
}
