import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { BudgetStatus, GroupDto } from '@skald/contracts';
import { ApiClient, Stack } from '@skald/testing';
import { SHOTS, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;

/**
 * Budgets in a real browser: Admin → Usage lists the users near a limit and sets a user's own
 * limits; Admin → Groups edits a group's budget; Account → Usage shows the user's limits, use and
 * reset. At 1280, 375 and 320 px, axe clean.
 */
describe('budgets in a real browser', () => {
  let stack: Stack;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let cleo: ApiClient;
  const m = randomUUID().slice(0, 8);
  const cleoEmail = `budget-cleo-${m}@skald.test`;
  const group = `Interns-${m}`;

  beforeAll(async () => {
    ({ stack, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    cleo = await admin.createUser(cleoEmail, PASSWORD);
    const g = await admin.post<GroupDto>('/api/admin/groups', {
      name: group,
      budget: { tokens_per_day: 10_000, cost_usd_per_month: 25 },
    });
    await admin.post(`/api/admin/groups/${g.body.id}/members`, { add: [cleo.user!.id] });
    // 9,000 tokens and $4.50 today: 90 % of the group's daily token limit.
    await db.query(
      `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens, cost_usd)
       VALUES ($1, 'round', 'sim', 'sim-model', 8000, 1000, 4.5)`,
      [cleo.user!.id],
    );
  });
  afterAll(async () => {
    await db?.query(`DELETE FROM groups WHERE name = $1`, [group]);
    await stopWebStack({ stack, db, browser });
  });

  async function open(width: number, email: string, password: string): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, password);
    return page;
  }

  for (const width of WIDTHS) {
    it(`Admin → Usage → Budgets: who is near a limit, and a user's own limits (${width} px)`, async () => {
      const page = await open(width, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin/usage`);
      const near = page.getByRole('list', { name: 'users near a limit' });
      await near.getByText(cleoEmail, { exact: true }).waitFor();
      await expect(near.innerText()).resolves.toMatch(/Tokens a day: 10,000[\s\S]*9,000 \(90 %\)[\s\S]*group Interns/);
      await shot(page, `budgets-admin-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `budgets-admin-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // Give Cleo a monthly token limit of her own: it replaces her group's.
      const form = page.getByRole('form', { name: "a user's limits" });
      await form.getByLabel('User').selectOption({ label: cleoEmail });
      await form.getByText("This user has their groups' limits.").waitFor();
      await form.getByLabel('Tokens a month').fill('2000000');
      await form.getByRole('button', { name: "Save the user's limits" }).click();
      await form.getByText('Saved.').waitFor();
      await form.scrollIntoViewIfNeeded();
      await shot(page, `budgets-admin-user-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      const own = await admin.get<BudgetStatus>(`/api/admin/users/${cleo.user!.id}/budget`);
      expect(own.body.limits).toEqual([expect.objectContaining({ dimension: 'tokens_per_month', limit: 2_000_000 })]);
      await form.getByRole('button', { name: "Use their groups' limits" }).click();
      await form.getByText("This user has their groups' limits.").waitFor();
      expect((await admin.get<BudgetStatus>(`/api/admin/users/${cleo.user!.id}/budget`)).body.user_limits).toBeNull();
      await page.context().close();
    });

    it(`Admin → Groups: a group's budget (${width} px)`, async () => {
      const page = await open(width, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin/groups`);
      const card = page.getByRole('article', { name: group });
      await card.waitFor();
      await expect(card.getByLabel('Tokens a day').inputValue()).resolves.toBe('10000');
      await card.getByLabel('Cost a day (USD)').fill('5');
      await card.getByRole('button', { name: 'Save' }).click();
      await page.waitForResponse((r) => r.url().endsWith('/api/admin/groups') && r.request().method() === 'GET');
      await card.scrollIntoViewIfNeeded();
      await shot(page, `budgets-group-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      const g = (await admin.get<{ items: GroupDto[] }>('/api/admin/groups')).body.items.find((x) => x.name === group);
      expect(g?.budget).toEqual({
        tokens_per_day: 10_000,
        tokens_per_month: null,
        cost_usd_per_day: 5,
        cost_usd_per_month: 25,
      });
      await page.context().close();
    });

    it(`Account → Usage: the user's own limits, use and reset (${width} px)`, async () => {
      const page = await open(width, cleoEmail, PASSWORD);
      await page.goto(`${stack.gatewayUrl}/#account`);
      const mine = page.getByRole('region', { name: 'Your limits' });
      await mine.getByText('Tokens a day: 10,000').waitFor();
      await expect(mine.innerText()).resolves.toMatch(/9,000 \(90 %\)/);
      await mine.scrollIntoViewIfNeeded();
      await shot(page, `budgets-account-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.context().close();
    });
  }
});
