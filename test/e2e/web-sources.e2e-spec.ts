import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320];
const NOTE = 'web sources e2e';

/**
 * "What changed in version 5?": the model searches (a SearXNG served by this test) and reads the
 * page it found (served here too, on `localhost`, which the tool runner is told to trust), both
 * allowed by an admin's rules — web_fetch by domain (`web:localhost`). The user sees each web
 * tool's sources, titles with their URLs, under its card without opening it; the model got the
 * page as Markdown naming its final URL. Screenshots at 1280, 375 and 320 px; axe finds nothing serious.
 */
describe('web: sources of the web tools', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let web: Server;
  let port = 0;

  beforeAll(async () => {
    web = createServer((req, res) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/searx/search')
        return void res.writeHead(200, { 'content-type': 'application/json' }).end(
          JSON.stringify({
            results: [
              {
                title: 'Release notes: version 5',
                url: `http://localhost:${port}/changes`,
                content: 'Streaming, and Node 18 dropped.',
              },
              {
                title: 'Migration guide for a long product name that wraps on phones',
                url: `http://localhost:${port}/guide/migrating-from-version-4-to-version-5`,
                content: 'Step by step.',
              },
            ],
          }),
        );
      if (url.pathname === '/old-changes') return void res.writeHead(301, { location: '/changes' }).end();
      if (url.pathname === '/changes')
        return void res
          .writeHead(200, { 'content-type': 'text/html; charset=utf-8' })
          .end(
            `<html><head><title>Release notes: version 5</title></head><body><nav>Home</nav><article><h1>Version 5</h1><p>${'Version 5 adds streaming responses. '.repeat(10)}</p><ul><li>Node 18 is no longer supported.</li></ul></article></body></html>`,
          );
      res.writeHead(404).end();
    });
    await new Promise<void>((r) => web.listen(0, '127.0.0.1', r));
    port = (web.address() as AddressInfo).port;
    ({ stack, sim, admin, db, browser } = await startWebStack({
      perApp: {
        'tool-runner': {
          SKALD_SANDBOX: 'none',
          SKALD_WEB_ALLOW_HOSTS: 'localhost',
          SKALD_WEB_SEARCH_BACKEND: 'searxng',
          SKALD_WEB_SEARCH_URL: `http://localhost:${port}/searx`,
        },
      },
    }));
    await db.query(
      `INSERT INTO approval_rules (id, tool_pattern, path_pattern, action, priority, note, name)
       VALUES ($1, 'web_fetch', 'web:localhost', 'allow', 1, $3, 'read the local docs'),
              ($2, 'web_search', NULL, 'allow', 1, $3, 'search')`,
      [randomUUID(), randomUUID(), NOTE],
    );
  });
  afterAll(async () => {
    await db?.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
    await stopWebStack({ stack, db, browser });
    await new Promise((r) => web?.close(r));
  });

  it('lists what the agent searched and read, with the URLs', async () => {
    const email = `ws-${randomUUID()}@skald.test`;
    await admin.createUser(email, PASSWORD);
    const m = `v5-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'web_search', arguments: { query: 'what changed in version 5', count: 2 } }] },
        { tool_calls: [{ name: 'web_fetch', arguments: { url: `http://localhost:${port}/old-changes` } }] },
        { content: `Version 5 adds streaming and drops Node 18. ${m}` },
      ],
    });
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, PASSWORD);
    await page.getByLabel('Message').fill(`What changed in version 5? ${m}`);
    await page.getByRole('button', { name: 'Send' }).click();
    await page.getByText(`Version 5 adds streaming and drops Node 18. ${m}`).waitFor({ timeout: 60_000 });

    const lists = page.getByRole('navigation', { name: 'Sources' });
    await lists.nth(1).waitFor();
    expect(await lists.count()).toBe(2);
    const links = async (i: number) =>
      lists
        .nth(i)
        .getByRole('link')
        .evaluateAll((as: Array<{ textContent: string | null; getAttribute(n: string): string | null }>) =>
          as.map((a) => [a.textContent, a.getAttribute('href'), a.getAttribute('rel')]),
        );
    expect(await links(0)).toEqual([
      [
        `Release notes: version 5http://localhost:${port}/changes`,
        `http://localhost:${port}/changes`,
        'noopener noreferrer nofollow',
      ],
      [
        `Migration guide for a long product name that wraps on phoneshttp://localhost:${port}/guide/migrating-from-version-4-to-version-5`,
        `http://localhost:${port}/guide/migrating-from-version-4-to-version-5`,
        'noopener noreferrer nofollow',
      ],
    ]);
    // The fetch was redirected within the host: its source is the final URL.
    expect(await links(1)).toEqual([
      [
        `Release notes: version 5http://localhost:${port}/changes`,
        `http://localhost:${port}/changes`,
        'noopener noreferrer nofollow',
      ],
    ]);

    // What the model was offered and what it read.
    const offered = await sim.waitForRequest((r) => JSON.stringify(r.body).includes(m));
    const tools = ((offered.body as { tools?: Array<{ function: { name: string } }> }).tools ?? []).map(
      (t) => t.function.name,
    );
    expect(tools).toEqual(expect.arrayContaining(['web_fetch', 'web_search']));
    const last = await sim.waitForRequest((r) => JSON.stringify(r.body).includes('Redirected from'), {
      timeoutMs: 20_000,
    });
    const toolText = JSON.stringify(last.body);
    expect(toolText).toContain(`URL: http://localhost:${port}/changes`);
    expect(toolText).toContain('Node 18 is no longer supported.');

    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 800 });
      await lists
        .nth(0)
        .evaluate((e: { scrollIntoView(o: { block: 'center' }): void }) => e.scrollIntoView({ block: 'center' }));
      await shot(page, `web-sources-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
    }
    await ctx.close();
  });
});
