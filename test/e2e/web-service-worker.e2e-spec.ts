import type { PushMessage } from '@skald/contracts/push-message';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { Stack } from '@skald/testing';
import { openWithServiceWorker, type WorkerPage } from '../support/service-worker';
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
  let deliver: WorkerPage['deliver'];

  beforeAll(async () => {
    ({ stack, db, browser } = await startWebStack());
    ({ ctx, page, deliver } = await openWithServiceWorker(browser, stack.gatewayUrl));
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

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
