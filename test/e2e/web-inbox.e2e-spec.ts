import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { DESKTOP, PHONE, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';

/** The inbox: a free-text answer to any question, the diff of a write, the narrow session approval with its expiry. */
describe('inbox in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack());
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  for (const [label, viewport] of [
    ['', DESKTOP],
    ['-phone', PHONE],
  ] as const) {
    it(`answers a question without suggestions in words; approves a write from its diff (${label || 'desktop'})`, async () => {
      const email = `i-${randomUUID()}@skald.test`;
      const api = await admin.createUser(email, PASSWORD);
      const ctx = await browser.newContext({ viewport });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, email, PASSWORD);
      const m = `q-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          {
            tool_calls: [{ name: 'ask_user_clarification', arguments: { title: 'Colour', question: 'Which colour?' } }],
          },
          { tool_calls: [{ name: 'write_file', arguments: { path: 'colour.txt', content: 'teal\n' } }] },
          { content: `noted ${m}` },
        ],
      });
      await api.post('/api/web/messages', { client_message_id: randomUUID(), content: `ask me ${m}` });
      await page.goto(`${stack.gatewayUrl}/#inbox`);
      await page.getByRole('heading', { name: 'Colour' }).waitFor();
      await page.getByLabel('Your answer to Colour').fill('teal, please');
      await shot(page, `inbox-question${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByRole('button', { name: 'Answer', exact: true }).click();

      // the write that follows waits in the inbox with its diff and the narrow session approval
      await page.getByText('Write /workspace/colour.txt (a new file)', { exact: false }).waitFor({ timeout: 20_000 });
      await expect(page.getByLabel('proposed change').innerText()).resolves.toContain('teal');
      const narrow = page.getByRole('button', { name: /Approve for this session \(1 h, until [^)]+\)/ });
      await narrow.waitFor();
      await shot(page, `inbox-diff${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      // the wide choice behind "Wider session approval…", opened: axe on it too
      await page.getByText('Wider session approval…').click();
      await page.locator('details.wider[open]').first().waitFor();
      await page.getByRole('radio').first().waitFor();
      await shot(page, `inbox-wider-approval${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.getByText('Wider session approval…').click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      const file = path.join(stack.env.SKALD_WORKSPACES, api.user!.id, 'colour.txt');
      const content = () => (existsSync(file) ? readFileSync(file, 'utf8') : null);
      for (let i = 0; i < 150 && content() !== 'teal\n'; i++) await new Promise((x) => setTimeout(x, 100));
      expect(content()).toBe('teal\n');
      // the model read the free-text answer as the tool result
      const reqs = await sim.requests({ contains: m });
      const second = reqs[1]?.body as { messages: Array<{ role: string; content?: unknown }> };
      expect(
        second.messages
          .filter((x) => x.role === 'tool')
          .map((x) => String(x.content))
          .join('\n'),
      ).toContain('teal, please');
      await ctx.close();
    });
  }

  it('code blocks in answers are highlighted and have a Copy button (desktop and phone)', async () => {
    const email = `c-${randomUUID()}@skald.test`;
    await admin.createUser(email, PASSWORD);
    for (const [label, viewport] of [
      ['', DESKTOP],
      ['-phone', PHONE],
    ] as const) {
      const ctx = await browser.newContext({ viewport, permissions: ['clipboard-read', 'clipboard-write'] });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, email, PASSWORD);
      const m = `code-${randomUUID()}`;
      const code = 'function greet(name) {\n  return `hi ${name}`; // say hi\n}';
      await sim.script({ match: m, replies: [{ content: `Here ${m}:\n\n\`\`\`js\n${code}\n\`\`\`\n` }] });
      await page.getByLabel('Message').fill(`show code ${m}`);
      await page.getByRole('button', { name: 'Send' }).click();
      const block = page.locator('.assistant-bubble pre.code-block').last();
      await block.locator('.hljs-keyword').first().waitFor();
      // The answer's block is decorated again whenever its bubble's markup is replaced (the Copy
      // button with it), so a click can land on a button that is gone and its 'Copied' never shows
      // (cause not pinned down). Click the current button until it says it copied (3 tries); a
      // button that never copies still fails.
      for (let attempt = 1; ; attempt++) {
        await block.getByRole('button', { name: 'Copy code' }).click();
        try {
          await block
            .getByRole('button', { name: 'Copy code' })
            .filter({ hasText: 'Copied' })
            .waitFor({ timeout: 1_000 });
          break;
        } catch (e) {
          if (attempt >= 3) throw e;
        }
      }
      const copied = await page.evaluate(() =>
        (
          globalThis as unknown as { navigator: { clipboard: { readText(): Promise<string> } } }
        ).navigator.clipboard.readText(),
      );
      expect(copied).toBe(code);
      await shot(page, `code-block${label}`);
      expect(await seriousViolations(page)).toEqual([]);
      await ctx.close();
    }
  });
});
