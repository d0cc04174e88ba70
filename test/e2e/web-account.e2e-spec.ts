import { existsSync, mkdirSync } from 'node:fs';
import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, Stack } from '@skald/testing';
import { ROOT, testDb } from '../support/db';
import { assertInvariantsAndClose } from '../support/invariants';
import { CHROMIUM, DESKTOP, launchChromium, PHONE, seriousViolations, shot, SHOTS, signIn } from '../support/browser';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';

/** Account: the caller's password and API tokens; an admin resets a user's password. */
describe('account screens in a real browser', () => {
  let stack: Stack;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    expect(existsSync(CHROMIUM)).toBe(true);
    mkdirSync(SHOTS, { recursive: true });
    stack = await Stack.start({ root: ROOT });
    admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    browser = await launchChromium();
  });
  afterAll(async () => {
    await browser?.close();
    await stack?.stop();
    await assertInvariantsAndClose(db);
  });

  const loginStatus = async (email: string, password: string) =>
    (
      await fetch(`${stack.gatewayUrl}/api/auth/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email, password }),
      })
    ).status;

  for (const [label, viewport] of [
    ['desktop', DESKTOP],
    ['phone', PHONE],
  ] as const) {
    it(`API tokens: create (shown once), last used, revoke; change the password (${label})`, async () => {
      const email = `a-${randomUUID()}@skald.test`;
      await admin.createUser(email, PASSWORD);
      const ctx = await browser.newContext({ viewport });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, email, PASSWORD);
      const suffix = label === 'phone' ? '-phone' : '';
      await page.getByRole('link', { name: 'Account' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByText('No API tokens.').waitFor();

      await page.getByLabel('Token name').fill('ci-bot');
      await page.getByRole('button', { name: 'Create token' }).click();
      const token = await page.getByLabel('New token').inputValue();
      expect(token.length).toBeGreaterThan(20);
      const row = page.getByRole('row', { name: /ci-bot/ });
      await row.waitFor();
      expect(await row.getByRole('cell').nth(2).innerText()).toBe('never');
      await shot(page, `account-tokens${suffix}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Done' }).click();
      expect(await page.getByLabel('New token').count()).toBe(0);

      // the token works, and the list shows when it was last used
      const bot = new ApiClient(stack.gatewayUrl, token);
      expect((await bot.get('/api/sessions')).status).toBe(200);
      await page.reload();
      await page.getByRole('row', { name: /ci-bot/ }).waitFor();
      expect(
        await page
          .getByRole('row', { name: /ci-bot/ })
          .getByRole('cell')
          .nth(2)
          .innerText(),
      ).not.toBe('never');

      page.once('dialog', (d) => void d.accept());
      await page.getByRole('button', { name: 'Revoke ci-bot' }).click();
      await page.getByText('No API tokens.').waitFor();
      expect((await bot.get('/api/sessions')).status).toBe(401);

      // a wrong current password is refused on the page
      await page.getByLabel('Current password').fill('not my password');
      await page.getByLabel('New password', { exact: true }).fill('a brand new secret');
      await page.getByLabel('Repeat the new password').fill('a brand new secret');
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByRole('alert').waitFor();
      await shot(page, `account-password-refused${suffix}`);
      expect(await loginStatus(email, PASSWORD)).toBe(200);

      await page.getByLabel('Current password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Change password' }).click();
      await page.getByText('Password changed. Sign in with the new one.').waitFor();
      await page.getByRole('button', { name: 'Sign in' }).waitFor();
      expect(await loginStatus(email, PASSWORD)).toBe(401);
      await signIn(page, stack.gatewayUrl, email, 'a brand new secret');
      await ctx.close();
    });
  }

  it('an admin resets a user’s password from the users tab', async () => {
    const email = `r-${randomUUID()}@skald.test`;
    await admin.createUser(email, PASSWORD);
    for (const [label, viewport] of [
      ['', DESKTOP],
      ['-phone', PHONE],
    ] as const) {
      const ctx = await browser.newContext({ viewport });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin`);
      await page.getByRole('tab', { name: 'Users' }).click();
      await page.getByRole('button', { name: `Reset password of ${email}` }).click();
      const next = `reset-${label || 'desktop'}-password`;
      await page.getByLabel(`New password for ${email}`).fill(next);
      await shot(page, `admin-reset-password${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Set password' }).click();
      await page.getByText(`Password of ${email} reset.`).waitFor();
      expect(await loginStatus(email, next)).toBe(200);
      await ctx.close();
    }
    expect(await loginStatus(email, PASSWORD)).toBe(401);
  });
});
