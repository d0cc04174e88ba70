import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const WIDTHS = [1280, 375, 320] as const;

/**
 * Admin console, Rules, in a real browser against the whole stack: an admin renames a stored rule
 * inline (the name is a labelled field with Save and Cancel; Escape cancels), and tests a call as a
 * user in a group: the verdict names the group's rule, while the same call tested for a user in no
 * group asks. At 1280, 375 and 320 px, axe clean, nothing wider than the screen.
 */
describe('admin console: rename a rule, test as a user', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  const m = randomUUID().slice(0, 8);
  const NOTE = `web rules ${m}`;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    void sim;
  });
  afterAll(async () => {
    await db?.query(`DELETE FROM approval_rules WHERE note = $1`, [NOTE]);
    await db?.query(`DELETE FROM groups WHERE name LIKE $1`, [`%-${m}%`]);
    await stopWebStack({ stack, db, browser });
  });

  for (const width of WIDTHS) {
    it(`renames a rule inline and tests a call as a user in a group (${width} px)`, async () => {
      const email = `rules-${width}-${m}@skald.test`;
      const member = await admin.createUser(email, 'correct horse battery');
      const group = await admin.post<{ id: string }>('/api/admin/groups', {
        name: `Builders-${width}-${m}`,
        security_groups: [`builders-${width}-${m}`],
      });
      await admin.post(`/api/admin/groups/${group.body.id}/members`, { add: [member.user!.id] });
      const before = `make-${width}-${m}`;
      const after = `builders may run make (${width})`;
      const rule = await admin.post<{ id: string }>('/api/approval/rules', {
        name: before,
        tool_pattern: 'execute_cmd',
        command_pattern: `make build-${m}`,
        security_group: `builders-${width}-${m}`,
        action: 'allow',
        priority: 2,
        note: NOTE,
      });
      expect(rule.status).toBe(201);

      const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin`);
      const rules = page.getByRole('region', { name: 'rules' });
      const opener = rules.getByRole('button', { name: `rename rule “${before}”` });
      await opener.click();
      const rename = rules.getByRole('form', { name: `rename rule “${before}”` });
      const field = rename.getByLabel(`New name of rule “${before}”`);
      const focused = (): Promise<unknown> =>
        page.evaluate('document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.tagName');
      await expect(focused()).resolves.toBe('INPUT');
      // Escape cancels: nothing is sent, the button has the focus again
      await field.fill('not this');
      await field.press('Escape');
      await expect(focused()).resolves.toBe(`rename rule “${before}”`);
      await opener.click();
      await field.fill(after);
      await shot(page, `admin-rule-rename-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      await rename.getByRole('button', { name: 'Save' }).click();
      await rules.getByRole('button', { name: `rename rule “${after}”` }).waitFor();
      const stored = await db.query<Array<{ name: string }>>(`SELECT name FROM approval_rules WHERE id = $1`, [
        rule.body.id,
      ]);
      expect(stored[0].name).toBe(after);

      const tester = page.getByRole('form', { name: 'rule tester' });
      await tester.getByLabel('Tool name').fill('execute_cmd');
      await tester.getByLabel('Arguments (JSON)').fill(JSON.stringify({ command: `make build-${m}` }));
      const verdict = tester.locator('output');
      await tester.getByRole('button', { name: 'Test' }).click();
      await expect(verdict.filter({ hasText: /^require/ }).waitFor()).resolves.toBeUndefined();
      await tester.getByLabel('Test as').selectOption({ label: email });
      await tester.getByRole('button', { name: 'Test' }).click();
      await verdict.filter({ hasText: `allow (rule “${after}”, security group builders-${width}-${m})` }).waitFor();
      await shot(page, `admin-rule-tester-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      const overflow = await page.evaluate('document.documentElement.scrollWidth - innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);
      await ctx.close();
    });
  }
});
