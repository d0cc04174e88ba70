import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375];

/**
 * Cron results stay findable: a notification that came while no page was open shows after the
 * page loads (`GET /api/notifications`), one that comes while it is open joins them live, and a
 * reload shows each once. Screenshots at 1280 and 375 px; axe finds nothing serious.
 */
describe('web: the notifications of cron runs', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({
      perApp: { scheduler: { SKALD_CRON_MIN_INTERVAL_S: '1', SKALD_JOB_POLL_MS: '300' } },
    }));
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  it('a notification from before the page loaded shows, a live one joins, a reload doubles none', async () => {
    const email = `nt-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const m = randomUUID();
    await sim.script({ match: `[N-${m}]`, replies: [{ content: `2 new mails [${m}]` }] });
    const job = await api.post<{ id: string }>('/api/cron/jobs', {
      title: 'Inbox',
      prompt: `Summarise my inbox [N-${m}]`,
      cron: '*/4 * * * * *',
      timezone: 'UTC',
    });
    expect(job.status).toBe(201);
    type List = { items: Array<{ id: string; summary: string }> };
    const stored = async () => (await api.get<List>('/api/notifications')).body.items;
    const first = await until('a first notification', async () => {
      const items = await stored();
      return items.length > 0 ? items : null;
    });
    expect(first[0].summary).toBe(`Cron job "Inbox" finished: 2 new mails [${m}]`);

    // The page opens after it: GET /api/notifications shows it.
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, PASSWORD);
    await page.getByText('connected', { exact: true }).waitFor();
    const strip = page.locator('details.notifications');
    await strip.locator('summary').waitFor();
    const count = async () => Number((await strip.locator('summary').innerText()).match(/\((\d+)\)/)?.[1]);
    const before = await count();
    expect(before).toBeGreaterThanOrEqual(first.length);
    // A run ends while the page is open: it joins live.
    await until('a live notification', async () => (await count()) > before);
    await api.post(`/api/cron/jobs/${job.body.id}/toggle`);
    const all = await until('the runs delivered', async () => {
      const items = await stored();
      await new Promise((r) => setTimeout(r, 5000));
      const again = await stored();
      return again.length === items.length ? again : null;
    });
    await until('the page has them all', async () => (await count()) === Math.min(all.length, 20));

    // A reload: each once, newest first.
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor();
    await strip.locator('summary').waitFor();
    await until('the reloaded list', async () => (await count()) === Math.min(all.length, 20));
    await strip.locator('summary').click();
    const rows = strip.locator('li');
    const shown = await rows.allInnerTexts();
    expect(shown).toHaveLength(Math.min(all.length, 20));
    // the stored list's order (newest first), each once
    shown.forEach((text, i) => expect(text).toContain(all[i].summary));
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 740 });
      await shot(page, `notifications-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
    }
    await ctx.close();
  });
});
