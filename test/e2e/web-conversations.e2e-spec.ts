import { readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { DESKTOP, PHONE, SHOTS } from '../support/browser';
import { ROOT } from '../support/db';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';

/** The conversations sidebar, regenerate / edit and the model picker in headless Chromium. */
describe('web client: conversations, regenerate and edit, model choice', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({
      env: { SKALD_TITLES: 'on' },
      llmClients: (simUrl) => [
        {
          name: 'primary',
          baseUrl: simUrl,
          model: 'sim-primary',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'high',
          priority: 1,
        },
        {
          name: 'backup',
          baseUrl: simUrl,
          model: 'sim-backup',
          apiKeyEnv: 'OPENAI_API_KEY',
          strength: 'medium',
          priority: 2,
        },
      ],
    }));
    // Registered first, so a title request is answered here whatever marker its text carries.
    await sim.script({ match: 'Write a short title', repeatLast: true, replies: [{ content: 'Launch plan review' }] });
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  /** A new user signed in; `bypassCSP` only so that axe can be injected. */
  async function signedIn(viewport: { width: number; height: number }) {
    const email = `wc-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const ctx = await browser.newContext({ viewport, bypassCSP: true, acceptDownloads: true });
    const page = await ctx.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    return { api, ctx, page };
  }
  const send = async (page: Page, text: string) => {
    await page.getByLabel('Message', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  const shot = (page: Page, name: string) => page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
  const sidebar = (page: Page) => page.getByRole('complementary', { name: 'Conversations' });
  /** What the model was sent for the nth request carrying `marker` (title requests left out). */
  const modelSaw = async (marker: string, nth: number) => {
    const reqs = (await sim.requests({ contains: marker })).filter(
      (r) => !JSON.stringify(r.body).includes('Write a short title'),
    );
    const body = reqs[nth]?.body as { model: string; messages: Array<{ role: string; content: unknown }> } | undefined;
    return {
      model: body?.model,
      texts: (body?.messages ?? [])
        .filter((x) => (x.role === 'user' || x.role === 'assistant') && String(x.content).includes(marker))
        .map((x) => String(x.content)),
    };
  };

  it('desktop: title, regenerate, edit, model choice, new chat, reopen, rename, search, export, delete', async () => {
    const { api, ctx, page } = await signedIn(DESKTOP);
    const m = `webconv-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: `First answer ${m}` },
        { content: `Regenerated answer ${m}` },
        { content: `Answer to the edit ${m}` },
        { content: `Backup model answer ${m}` },
        { content: `Continued answer ${m}` },
      ],
    });
    await send(page, `When do we launch the rocket? ${m}`);
    await page.getByText(`First answer ${m}`).waitFor();
    // the title comes from the model in the background and shows in the sidebar
    await sidebar(page)
      .getByRole('button', { name: /Launch plan review/ })
      .waitFor({ timeout: 20_000 });
    await shot(page, 'conversations-desktop');
    await expectNoSeriousViolations(page, 'conversations sidebar');

    // regenerate: the old answer leaves the screen, the model never saw it
    await page.getByRole('button', { name: 'Regenerate' }).click();
    await page.getByText(`Regenerated answer ${m}`).waitFor();
    expect(await page.getByText(`First answer ${m}`).count()).toBe(0);
    expect((await modelSaw(m, 1)).texts).toEqual([expect.stringContaining('When do we launch the rocket?')]);

    // edit-and-resend
    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    const editor = page.getByLabel('Edited text');
    await editor.fill(`When do we launch the boat? ${m}`);
    await shot(page, 'message-edit-desktop');
    await expectNoSeriousViolations(page, 'message edit');
    await page.getByRole('button', { name: 'Save and submit' }).click();
    await page.getByText(`Answer to the edit ${m}`).waitFor();
    expect(await page.getByText('When do we launch the rocket?').count()).toBe(0);
    expect(await page.getByText(`Regenerated answer ${m}`).count()).toBe(0);
    expect((await modelSaw(m, 2)).texts).toEqual([expect.stringContaining('When do we launch the boat?')]);

    // the model picker: AUTO first, then the user's clients; the choice is what /model does
    const picker = page.getByRole('combobox', { name: 'Model' });
    await until('the model list', async () => (await picker.locator('option').count()) === 3);
    expect(await picker.locator('option').allInnerTexts()).toEqual([
      'AUTO (best available)',
      'primary · sim-primary',
      'backup · sim-backup',
    ]);
    await picker.selectOption('backup');
    await until(
      'the pin',
      async () => (await api.get<{ pinned: string | null }>('/api/llm/clients?source=web')).body.pinned === 'backup',
    );
    await shot(page, 'model-picker-desktop');
    await send(page, `And the budget? ${m}`);
    await page.getByText(`Backup model answer ${m}`).waitFor();
    expect((await modelSaw(m, 3)).model).toBe('sim-backup');
    const firstId = (
      await api.get<{ items: Array<{ id: string; is_active: boolean }> }>('/api/sessions')
    ).body.items.find((s) => s.is_active)!.id;

    // new chat: the old one stays in the list; a new one starts empty
    await sidebar(page).getByRole('button', { name: 'New chat' }).click();
    await until('an empty timeline', async () => (await page.locator('.timeline > li').count()) === 0);
    await sidebar(page).locator('.conversation-list li').nth(1).waitFor();
    await picker.selectOption('auto');
    await until(
      'auto',
      async () => (await api.get<{ pinned: string | null }>('/api/llm/clients?source=web')).body.pinned === null,
    );

    // reopen the first conversation: its messages and its model come back, and it goes on
    await sidebar(page)
      .getByRole('button', { name: /Launch plan review/ })
      .click();
    await page.getByText(`Backup model answer ${m}`).waitFor();
    await until('the remembered model', async () => (await picker.inputValue()) === 'backup');
    await send(page, `One more thing ${m}`);
    await page.getByText(`Continued answer ${m}`).waitFor();
    const continued = await modelSaw(m, 4);
    expect(continued.model).toBe('sim-backup');
    expect(continued.texts).toEqual([
      expect.stringContaining('When do we launch the boat?'),
      `Answer to the edit ${m}`,
      expect.stringContaining('And the budget?'),
      `Backup model answer ${m}`,
      expect.stringContaining('One more thing'),
    ]);
    expect(
      (await api.get<{ items: Array<{ id: string; is_active: boolean }> }>('/api/sessions')).body.items.find(
        (s) => s.is_active,
      )!.id,
    ).toBe(firstId);

    // rename from the conversation's menu
    await sidebar(page).locator('summary[aria-label="Actions for Launch plan review"]').click();
    await sidebar(page).getByRole('button', { name: 'Rename' }).click();
    await sidebar(page).getByLabel('New title').fill('Boat launch');
    await shot(page, 'conversation-rename-desktop');
    await expectNoSeriousViolations(page, 'rename');
    await sidebar(page).getByRole('button', { name: 'Save' }).click();
    await sidebar(page)
      .getByRole('button', { name: /Boat launch/ })
      .waitFor();

    // search over the user's own messages
    await sidebar(page).getByLabel('Search conversations').fill('boat');
    await sidebar(page).getByRole('button', { name: 'Search' }).click();
    const results = sidebar(page).getByRole('region', { name: 'Search results' });
    await results.getByText('1 conversation match.').waitFor();
    await results.getByText(/When do we launch the boat/).waitFor();
    await shot(page, 'conversations-search-desktop');
    await expectNoSeriousViolations(page, 'search results');
    await sidebar(page).getByLabel('Search conversations').fill('rocket');
    await sidebar(page).getByRole('button', { name: 'Search' }).click();
    await results.getByText('No conversation matches.').waitFor();
    await sidebar(page).getByLabel('Search conversations').fill('');

    // export: a Markdown download of what the chat shows
    await sidebar(page).locator('summary[aria-label="Actions for Boat launch"]').click();
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      sidebar(page).getByRole('button', { name: 'Export Markdown' }).click(),
    ]);
    expect(download.suggestedFilename()).toMatch(/^skald-boat-launch-\d{4}-\d{2}-\d{2}\.md$/);
    const md = readFileSync(await download.path(), 'utf8');
    expect(md).toContain('# Boat launch');
    expect(md).toContain(`Continued answer ${m}`);
    expect(md).not.toContain('rocket');

    // delete: gone from the list and from the database
    await sidebar(page).locator('summary[aria-label="Actions for Boat launch"]').click();
    await sidebar(page).getByRole('button', { name: 'Delete' }).click();
    await until(
      'the deletion',
      async () =>
        (await sidebar(page)
          .getByRole('button', { name: /Boat launch/ })
          .count()) === 0,
    );
    expect(await db.query<unknown[]>(`SELECT 1 FROM sessions WHERE id = $1`, [firstId])).toHaveLength(0);
    expect(await db.query<unknown[]>(`SELECT 1 FROM session_events WHERE session_id = $1`, [firstId])).toHaveLength(0);
    await shot(page, 'conversations-after-delete-desktop');
    await ctx.close();
  });

  it('phone (375 px): the sidebar is a drawer; search, edit and the model picker fit', async () => {
    const { ctx, page } = await signedIn(PHONE);
    const m = `webphone-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [{ content: `Phone answer ${m}` }, { content: `Edited phone answer ${m}` }],
    });
    await send(page, `Packing list for the hike ${m}`);
    await page.getByText(`Phone answer ${m}`).waitFor();
    await shot(page, 'chat-phone-conversations-closed');
    const toggle = page.getByRole('button', { name: 'Conversations' });
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');
    expect(await sidebar(page).getByLabel('Search conversations').isVisible()).toBe(false);
    await toggle.click();
    await sidebar(page)
      .getByRole('button', { name: /Launch plan review/ })
      .waitFor({ timeout: 20_000 });
    await shot(page, 'conversations-phone');
    await expectNoSeriousViolations(page, 'conversations drawer (phone)');
    await sidebar(page).getByLabel('Search conversations').fill('hike');
    await sidebar(page).getByRole('button', { name: 'Search' }).click();
    await sidebar(page).getByText('1 conversation match.').waitFor();
    await shot(page, 'conversations-search-phone');
    await expectNoSeriousViolations(page, 'search (phone)');
    await sidebar(page)
      .getByRole('button', { name: /Packing list for the hike/ })
      .click();
    expect(await toggle.getAttribute('aria-expanded')).toBe('false');

    await page.getByRole('button', { name: 'Edit', exact: true }).click();
    await page.getByLabel('Edited text').fill(`Packing list for the climb ${m}`);
    await shot(page, 'message-edit-phone');
    await expectNoSeriousViolations(page, 'message edit (phone)');
    await page.getByRole('button', { name: 'Save and submit' }).click();
    await page.getByText(`Edited phone answer ${m}`).waitFor();
    expect(await page.getByText(`Phone answer ${m}`, { exact: true }).count()).toBe(0);
    await page.getByRole('combobox', { name: 'Model' }).waitFor();
    await shot(page, 'model-picker-phone');
    await expectNoSeriousViolations(page, 'chat with regenerate and the model picker (phone)');
    // nothing wider than the screen
    const width = await page.evaluate(
      () =>
        (globalThis as unknown as { document: { documentElement: { scrollWidth: number } } }).document.documentElement
          .scrollWidth,
    );
    expect(width).toBeLessThanOrEqual(PHONE.width);
    await ctx.close();
  });
});

interface BrowserGlobals {
  axe: { run(): Promise<{ violations: Array<{ id: string; impact: string }> }> };
}

async function expectNoSeriousViolations(page: Page, screen: string): Promise<void> {
  await page.addScriptTag({ path: path.join(ROOT, 'node_modules/axe-core/axe.min.js') });
  const violations = await page.evaluate(async () => {
    const axe = (globalThis as unknown as BrowserGlobals).axe;
    const r = await axe.run();
    return r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical').map((v) => v.id);
  });
  expect({ screen, violations }).toEqual({ screen, violations: [] });
}
