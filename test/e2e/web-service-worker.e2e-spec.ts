import type { PushMessage } from '@skald/contracts/push-message';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { Stack } from '@skald/testing';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

interface Shown {
  title: string;
  body: string;
  tag: string;
  actions: string[];
}

/** What the page's `navigator` offers these tests (the test tsconfig has no DOM library). */
interface PageNavigator {
  serviceWorker: {
    ready: Promise<{
      getNotifications(): Promise<
        Array<{ title: string; body: string; tag: string; actions?: Array<{ title: string }> }>
      >;
    }>;
  };
}

/** The notifications the page's service worker shows now. */
function shown(page: Page): Promise<Shown[]> {
  return page.evaluate(async () => {
    const nav = (globalThis as unknown as { navigator: PageNavigator }).navigator;
    const list = await (await nav.serviceWorker.ready).getNotifications();
    return list.map((n) => ({
      title: n.title,
      body: n.body,
      tag: n.tag,
      actions: (n.actions ?? []).map((a) => a.title),
    }));
  });
}

/**
 * The web client's service worker, in Chromium: it installs from the built page, a push message
 * delivered to it (the DevTools protocol's ServiceWorker.deliverPushMessage, as a push service would)
 * shows as a notification, an approval's with Approve and Reject, one that is malformed or points
 * off the origin shows nothing, and with the server gone the page still opens from its cache.
 */
describe('web: the service worker', () => {
  let stack: Stack;
  let db: DataSource;
  let browser: Browser;
  let ctx: BrowserContext;
  let page: Page;
  let registrationId: string;

  beforeAll(async () => {
    ({ stack, db, browser } = await startWebStack({ readyTimeoutMs: 90_000 }));
    ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    await ctx.grantPermissions(['notifications'], { origin: stack.gatewayUrl });
    page = await ctx.newPage();
    const cdp = await ctx.newCDPSession(page);
    const registrations: Array<{ registrationId: string; scopeURL: string }> = [];
    cdp.on('ServiceWorker.workerRegistrationUpdated', (e: { registrations: typeof registrations }) =>
      registrations.push(...e.registrations),
    );
    await cdp.send('ServiceWorker.enable');
    await page.goto(stack.gatewayUrl);
    // bounded: a page that never registers its worker fails here, naming it
    await page.evaluate(async () => {
      const ready = (globalThis as unknown as { navigator: PageNavigator }).navigator.serviceWorker.ready;
      const late = new Promise((_, reject) =>
        setTimeout(() => reject(new Error('the page registered no service worker within 30 s')), 30_000),
      );
      await Promise.race([ready, late]);
    });
    registrationId = await until('the worker registration', async () => {
      const r = registrations.find((x) => x.scopeURL === `${stack.gatewayUrl}/`);
      return r?.registrationId ?? null;
    });
    (page as Page & { cdp?: typeof cdp }).cdp = cdp;
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  const deliver = (data: string) =>
    (page as Page & { cdp: { send(m: string, p: object): Promise<unknown> } }).cdp.send(
      'ServiceWorker.deliverPushMessage',
      { origin: stack.gatewayUrl, registrationId, data },
    );

  it('is served at /sw.js with the page’s policy, never cached', async () => {
    const res = await fetch(`${stack.gatewayUrl}/sw.js`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toMatch(/^text\/javascript/);
    expect(res.headers.get('cache-control')).toBe('no-cache');
    expect(res.headers.get('content-security-policy')).toContain("default-src 'none'");
  });

  it('shows a delivered push message; an approval offers Approve and Reject; a bad one shows nothing', async () => {
    const approval: PushMessage = {
      kind: 'approval',
      title: 'Approve execute_cmd?',
      body: 'npm publish — in "release"',
      url: '/#inbox',
      tag: 'approval:sw-e2e',
      action_token: 'token.sig',
    };
    // off the origin, not JSON, a token on a turn: each shows nothing
    await deliver(JSON.stringify({ ...approval, tag: 'bad-1', url: '//evil.example/' }));
    await deliver('not json');
    await deliver(JSON.stringify({ kind: 'turn', title: 'x', body: 'y', url: '/', tag: 'bad-2', action_token: 't' }));
    await deliver(JSON.stringify(approval));
    await deliver(
      JSON.stringify({ kind: 'turn', title: 'Done', body: 'The answer is ready.', url: '/', tag: 'turn:1' }),
    );
    const list = await until('two notifications', async () => {
      const now = await shown(page);
      return now.length >= 2 ? now : null;
    });
    expect(list.sort((a, b) => a.tag.localeCompare(b.tag))).toEqual([
      {
        title: 'Approve execute_cmd?',
        body: 'npm publish — in "release"',
        tag: 'approval:sw-e2e',
        actions: ['Approve', 'Reject'],
      },
      { title: 'Done', body: 'The answer is ready.', tag: 'turn:1', actions: [] },
    ]);
  });

  it('with the server unreachable, the page opens from the cache', async () => {
    await page.reload();
    await page.getByLabel('Email').waitFor();
    for (const p of stack.byName('gateway')) p.child.kill('SIGSTOP');
    try {
      await ctx.setOffline(true);
      await page.reload({ timeout: 30_000 });
      await page.getByLabel('Email').waitFor({ timeout: 15_000 });
      expect(await page.title()).toBe('Skald');
    } finally {
      await ctx.setOffline(false);
      for (const p of stack.byName('gateway')) p.child.kill('SIGCONT');
    }
  });
});
