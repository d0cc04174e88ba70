import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const WIDTHS = [1280, 375, 320] as const;

/**
 * Admin console, Groups, in a real browser against the whole stack: an admin creates a group,
 * sets what it allows, adds a member and removes them; a membership from the identity provider's
 * claim is tagged and offers no Remove. At 1280, 375 and 320 px, axe clean, nothing wider than
 * the screen.
 */
describe('admin console: groups', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  const m = randomUUID().slice(0, 8);

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    void sim;
  });
  afterAll(async () => {
    await db?.query(`DELETE FROM groups WHERE name LIKE $1`, [`%-${m}%`]);
    await stopWebStack({ stack, db, browser });
  });

  for (const width of WIDTHS) {
    it(`creates a group, sets what it allows, adds and removes a member (${width} px)`, async () => {
      const email = `member-${width}-${m}@skald.test`;
      const member = await admin.createUser(email, 'correct horse battery');
      const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin/groups`);
      await page.getByRole('tab', { name: 'Groups', selected: true }).waitFor();

      const name = `Interns-${width}-${m}`;
      const create = page.getByRole('form', { name: 'new group' });
      await create.getByLabel('Group name').fill(name);
      await create.getByRole('button', { name: 'Add group' }).click();
      const card = page.getByRole('article', { name });
      await card.waitFor();
      const settings = card.getByRole('form', { name: `settings of ${name}` });
      await settings.getByLabel('Allowed agents').fill('main, researcher');
      await settings.getByLabel('Allowed LLM clients').fill('default');
      await settings.getByLabel('Security groups').fill(`sg-${m}`);
      await settings.getByRole('button', { name: 'Save' }).click();
      const add = card.getByRole('form', { name: `add a member to ${name}` });
      await add.getByLabel('User').selectOption({ label: email });
      await add.getByRole('button', { name: 'Add member' }).click();
      await card
        .getByRole('list', { name: `members of ${name}` })
        .getByText(email)
        .waitFor();

      const groups = (await admin.get<{ items: Array<Record<string, unknown>> }>('/api/admin/groups')).body.items;
      expect(groups.find((g) => g.name === name)).toMatchObject({
        allowed_agents: ['main', 'researcher'],
        allowed_llm_clients: ['default'],
        security_groups: [`sg-${m}`],
        members: [{ user_id: member.user!.id, email, source: 'admin' }],
      });
      await shot(page, `admin-groups-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      const overflow = await page.evaluate('document.documentElement.scrollWidth - innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);

      await card.getByRole('button', { name: `Remove ${email}` }).click();
      await card.getByText('No members.').waitFor();
      await ctx.close();
    });
  }
});
