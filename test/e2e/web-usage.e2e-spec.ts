import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { UsageReport } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { SHOTS, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';
import { until } from '../support/until';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;
const DAY_MS = 86_400_000;
const day = (t: number) => new Date(t).toISOString().slice(0, 10);

/**
 * LLM usage, against the whole stack with llm-sim: a user's answered calls and a failed one (the
 * provider refuses, 400) reach the ledger and their own report; an admin reads every user's
 * (top users, failed calls, CSV with formula cells neutralised); a user reads nobody else's
 * (403, or 400 naming the field they tried). Admin → Usage and Account → Usage at 1280, 375 and
 * 320 px, axe clean.
 */
describe('LLM usage in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let ann: ApiClient;
  let bob: ApiClient;
  const annEmail = `usage-ann-${randomUUID()}@skald.test`;
  const today = Date.parse(`${day(Date.now())}T00:00:00Z`);
  const range = `from=${day(today - 29 * DAY_MS)}&until=${day(today + DAY_MS)}`;
  const groupName = `Research-${randomUUID().slice(0, 8)}`;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    ann = await admin.createUser(annEmail, PASSWORD);
    const group = await admin.post<{ id: string }>('/api/admin/groups', { name: groupName });
    await admin.post(`/api/admin/groups/${group.body.id}/members`, { add: [ann.user!.id] });
    // A client name a spreadsheet would read as a formula: the export must not let it run.
    bob = await admin.createUser(`+cmd-${randomUUID()}@skald.test`, PASSWORD);
    const ok = `ok-${randomUUID()}`;
    const bad = `bad-${randomUUID()}`;
    await sim.script({
      match: ok,
      replies: [{ content: 'counted', usage: { prompt_tokens: 1200, completion_tokens: 300 } }],
    });
    await sim.script({ match: bad, replies: [{ fail: { kind: 'http_error', status: 400, message: 'malformed' } }] });
    await ann.post('/api/web/messages', { client_message_id: randomUUID(), content: `count me ${ok}` });
    await until('the answered call in her report', async () => {
      const r = await ann.get<UsageReport>(`/api/llm/usage?${range}`);
      return r.body.totals?.calls >= 1 ? true : undefined;
    });
    await ann.post('/api/web/messages', { client_message_id: randomUUID(), content: `fail me ${bad}` });
    await until('the failed call in her report', async () => {
      const r = await ann.get<UsageReport>(`/api/llm/usage?${range}`);
      return r.body.totals?.failed_calls >= 1 ? true : undefined;
    });
    // Four weeks of history for the chart: ledger rows written in the past roll up like live ones.
    for (let i = 1; i < 28; i++)
      await db.query(
        `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens, cost_usd, created_at)
         VALUES ($1, 'round', 'sim', 'sim-model', $3, $4, $5, $6), ($2, 'round', 'sim', 'sim-mini', $4, 200, NULL, $6)`,
        [
          ann.user!.id,
          bob.user!.id,
          2000 + ((i * 7919) % 9000),
          300 + ((i * 104729) % 1500),
          0.01 * i,
          new Date(today - i * DAY_MS + 3_600_000),
        ],
      );
  });
  afterAll(async () => {
    await db?.query(`DELETE FROM groups WHERE name = $1`, [groupName]);
    await stopWebStack({ stack, db, browser });
  });

  it("over REST a user reads their own usage and nobody else's", async () => {
    const own = await ann.get<UsageReport>(`/api/llm/usage?${range}`);
    expect(own.status).toBe(200);
    expect(own.body.user_id).toBe(ann.user!.id);
    expect(own.body.days).toHaveLength(30);
    expect(own.body.totals.input_tokens).toBeGreaterThanOrEqual(1200);
    expect(own.body.failures).toEqual([expect.objectContaining({ error_kind: 'bad_request', calls: 1 })]);
    expect(own.body.top_users).toEqual([]);
    for (const target of ['/api/admin/usage', `/api/admin/usage/users/${bob.user!.id}`, '/api/admin/usage/export'])
      expect((await ann.get(`${target}?${range}`)).status).toBe(403);
    expect(await ann.get(`/api/llm/usage?${range}&user_id=${bob.user!.id}`)).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', field: 'user_id' } },
    });
    expect(await ann.get(`/api/llm/usage?from=2026-01-01&until=2027-01-03`)).toMatchObject({
      status: 400,
      body: { error: { code: 'invalid_input', field: 'until' } },
    });
    expect((await ann.get(`/api/llm/usage?from=2026-02-30&until=2026-03-03`)).body).toMatchObject({
      error: { field: 'from' },
    });
  });

  it("an admin reads every user's usage, one user's, and a CSV that runs nothing", async () => {
    const all = await admin.get<UsageReport>(`/api/admin/usage?${range}&top=100`);
    expect(all.status).toBe(200);
    expect(all.body.top_users.map((u) => u.email)).toEqual(expect.arrayContaining([annEmail]));
    const one = await admin.get<UsageReport>(`/api/admin/usage/users/${ann.user!.id}?${range}`);
    expect(one.body.totals).toEqual((await ann.get<UsageReport>(`/api/llm/usage?${range}`)).body.totals);
    expect((await admin.get(`/api/admin/usage/users/${randomUUID()}?${range}`)).status).toBe(404);
    const res = await fetch(new URL(`/api/admin/usage/export?${range}&by=user`, stack.gatewayUrl), {
      headers: { authorization: `Bearer ${admin.token}` },
    });
    expect(res.headers.get('content-type')).toMatch(/^text\/csv/);
    expect(res.headers.get('content-disposition')).toMatch(/^attachment; filename="usage-user-/);
    const csv = await res.text();
    expect(csv.split('\r\n')[0]).toBe('user_id,email,calls,input_tokens,output_tokens,cost_usd');
    expect(csv).toContain(`,${annEmail},`);
    expect(csv).toContain(`,'+cmd-`);
    expect(csv).not.toMatch(/(^|,)\+cmd-/m);
  });

  async function open(width: number, email: string, password: string): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, password);
    return page;
  }

  for (const width of WIDTHS) {
    it(`Admin → Usage: totals, chart with its table, models, top users, failed calls, CSV (${width} px)`, async () => {
      const page = await open(width, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin/usage`);
      await page.getByRole('heading', { name: 'Usage of every user' }).waitFor();
      const top = page.getByRole('region', { name: 'Top users by tokens' });
      await top.getByText(annEmail).waitFor();
      await page.locator('.usage-chart canvas').first().waitFor();
      await expect(page.getByRole('region', { name: 'Failed calls' }).innerText()).resolves.toContain('bad_request');
      // per group: ann's group with her tokens, the users in no group on their own row
      const groups = page.getByRole('region', { name: /^Per group/ });
      await groups.getByRole('cell', { name: groupName, exact: true }).waitFor();
      await groups.getByRole('cell', { name: '(no group)', exact: true }).waitFor();
      await page.getByText('Per day (table)').click();
      await expect(page.getByRole('region', { name: 'Per day' }).locator('tbody tr').count()).resolves.toBe(30);
      await page.getByText('Per day (table)').click();
      await shot(page, `usage-admin-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `usage-admin-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      const download = page.waitForEvent('download');
      await page.getByRole('button', { name: 'per model' }).click();
      expect((await download).suggestedFilename()).toMatch(/^usage-model-.*\.csv$/);
      const byGroup = page.waitForEvent('download');
      await page.getByRole('button', { name: 'per group' }).click();
      expect((await byGroup).suggestedFilename()).toMatch(/^usage-group-.*\.csv$/);
      await page.getByRole('button', { name: '7 days' }).click();
      await until('a 7-day range', async () =>
        (await page.getByLabel('From').inputValue()) === day(today - 6 * DAY_MS) ? true : undefined,
      );
      await page.context().close();
    });

    it(`Account → Usage: the user's own usage only (${width} px)`, async () => {
      const page = await open(width, annEmail, PASSWORD);
      await page.goto(`${stack.gatewayUrl}/#account`);
      await page.getByRole('heading', { name: 'Your usage' }).waitFor();
      await page.locator('.usage-chart canvas').first().waitFor();
      const models = page.getByRole('region', { name: 'Per client and model' });
      await models.locator('tbody tr').first().waitFor();
      expect(await page.getByRole('region', { name: 'Top users by tokens' }).count()).toBe(0);
      expect(await page.getByRole('region', { name: /^Per group/ }).count()).toBe(0);
      expect(await page.getByRole('button', { name: 'per model' }).count()).toBe(0);
      await shot(page, `usage-account-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `usage-account-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      await page.context().close();
    });
  }
});
