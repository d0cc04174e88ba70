import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, Stack } from '@skald/testing';
import { DESKTOP, PHONE, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';

/** Account: the caller's password and API tokens; an admin resets a user's password. */
describe('account screens in a real browser', () => {
  let stack: Stack;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, admin, db, browser } = await startWebStack());
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

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
      // on a phone the navigation is a menu
      if (label === 'phone') await page.getByRole('button', { name: 'Menu' }).click();
      await page.getByRole('link', { name: 'Account' }).click();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await page.getByText('No API tokens.').waitFor();

      await page.getByLabel('Token name').fill('ci-bot');
      await page.getByRole('button', { name: 'Create token' }).click();
      const token = await page.getByLabel('New token').inputValue();
      expect(token.length).toBeGreaterThan(20);
      const row = page.getByRole('row', { name: /ci-bot/ });
      await row.waitFor();
      expect(await row.locator('td.last-used').innerText()).toBe('never');
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
      await page.getByRole('button', { name: 'Set password', exact: true }).click();
      await page.getByText(`Password of ${email} reset.`).waitFor();
      expect(await loginStatus(email, next)).toBe(200);
      await ctx.close();
    }
    expect(await loginStatus(email, PASSWORD)).toBe(401);
  });

  it('installs on a phone: a manifest with icons, served under the page’s CSP', async () => {
    const page = await (await fetch(stack.gatewayUrl)).text();
    expect(page).toContain('<link rel="manifest" href="/assets/manifest.webmanifest"');
    const res = await fetch(`${stack.gatewayUrl}/assets/manifest.webmanifest`);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toContain('application/manifest+json');
    const manifest = (await res.json()) as {
      display: string;
      start_url: string;
      icons: Array<{ src: string; sizes: string }>;
    };
    expect(manifest).toMatchObject({ display: 'standalone', start_url: '/' });
    for (const icon of manifest.icons) {
      const img = await fetch(`${stack.gatewayUrl}${icon.src}`);
      expect([icon.src, img.status, img.headers.get('content-type')]).toEqual([icon.src, 200, 'image/png']);
      const bytes = Buffer.from(await img.arrayBuffer());
      const [w, h] = [bytes.readUInt32BE(16), bytes.readUInt32BE(20)];
      expect(`${w}x${h}`).toBe(icon.sizes);
    }
    expect(manifest.icons.map((i) => i.sizes)).toEqual(expect.arrayContaining(['192x192', '512x512']));
    // the page's policy lets the browser fetch it (default-src 'none' would not)
    expect((await fetch(stack.gatewayUrl)).headers.get('content-security-policy')).toContain("manifest-src 'self'");
  });

  it('dark mode follows prefers-color-scheme, the toggle overrides it, and axe finds no serious violation either way', async () => {
    const email = `d-${randomUUID()}@skald.test`;
    await admin.createUser(email, PASSWORD);
    for (const [label, viewport] of [
      ['', DESKTOP],
      ['-phone', PHONE],
    ] as const) {
      const ctx = await browser.newContext({ viewport, colorScheme: 'dark' });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, email, PASSWORD);
      const bg = () =>
        page.evaluate(() => {
          const g = globalThis as unknown as {
            getComputedStyle(e: unknown): { backgroundColor: string };
            document: { body: unknown };
          };
          return g.getComputedStyle(g.document.body).backgroundColor;
        });
      expect(await bg()).toBe('rgb(22, 23, 26)');
      await shot(page, `chat-dark${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.goto(`${stack.gatewayUrl}/#account`);
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      await shot(page, `account-dark${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      // system (dark here) → dark → light: the choice wins over the system's and survives a reload
      await page.getByRole('button', { name: /Colour theme: system/ }).click();
      await page.getByRole('button', { name: /Colour theme: dark/ }).click();
      expect(await bg()).toBe('rgb(247, 247, 245)');
      await page.reload();
      await page.getByRole('heading', { name: 'Account' }).waitFor();
      expect(await bg()).toBe('rgb(247, 247, 245)');
      await ctx.close();
    }
  });
});
