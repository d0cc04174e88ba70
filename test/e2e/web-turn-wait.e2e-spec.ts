import { randomUUID } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320];
/** The element a locator's `evaluate` gets, as far as this spec uses it (its tsconfig has no DOM types). */
type Scrollable = { scrollIntoView(options: { block: 'center' }): void };
const NOTICE = 'Waiting to start — you already have 1 conversation running (your limit). It starts when that one ends.';
const NOTICE_ALONE =
  'Your message is waiting to start — you already have 1 conversation running (your limit). It starts when that one ends.';

/**
 * What a user sees past the per-user cap on turns running at once (cap 1 here): the message they
 * sent stays shown with a quiet notice naming the limit, also after a reload, and the notice goes
 * when its turn starts. Then the approval card of a command that offers a narrow session approval.
 * Screenshots at 1280, 375 and 320 px; axe finds nothing serious on either screen.
 */
describe('web: a message held back by the cap on turns running at once', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({
      env: { SKALD_MAX_CONCURRENT_TURNS_PER_USER: '1' },
      perApp: { 'tool-runner': { SKALD_SANDBOX: 'none' } },
    }));
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  it('the waiting message carries the notice (also after a reload) until its turn starts; the approval card of git status --short reads well', async () => {
    const email = `tw-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    // Another surface of the user takes the one slot with a slow turn.
    const busy = `busy-${randomUUID()}`;
    await sim.script({ match: busy, replies: [{ content: `late ${busy}`, latency: { firstByteMs: 120_000 } }] });
    const cli = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'cli' });
    await cli.waitForType('hello');
    cli.send({ type: 'message', client_message_id: `c-${busy}`, content: `go ${busy}` });
    await cli.waitFor((f) => f.type === 'user_message', 20_000);

    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, PASSWORD);
    const m = `held-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `answered ${m}` }] });
    await page.getByLabel('Message').fill(`please summarise the release notes ${m}`);
    await page.getByRole('button', { name: 'Send' }).click();
    const notice = page.getByText(NOTICE, { exact: true });
    await notice.waitFor();
    // The message itself stays shown, as sent (not "sending…").
    await page.getByText(`please summarise the release notes ${m}`).waitFor();
    expect(await page.getByText('sending…').count()).toBe(0);
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 740 });
      await shot(page, `turn-wait-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
    }
    // A reload: the message is not in this tab's outbox any more; turn_running says it waits.
    await page.setViewportSize({ width: 1280, height: 900 });
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor();
    await page.getByText(NOTICE_ALONE, { exact: true }).waitFor();
    await shot(page, 'turn-wait-reloaded-1280');
    expect(await seriousViolations(page)).toEqual([]);

    // The slow turn is stopped: the slot frees, the waiting message enters and is answered; the notice goes.
    cli.send({ type: 'cancel' });
    await page.getByText(`answered ${m}`).waitFor({ timeout: 30_000 });
    await page.getByText(NOTICE_ALONE, { exact: true }).waitFor({ state: 'detached' });
    expect(await page.getByText(`please summarise the release notes ${m}`).count()).toBe(1);

    // A command that offers a narrow session approval: the scope is spelled out on the card.
    const g = `scope-${randomUUID()}`;
    await sim.script({
      match: g,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git status --short' } }] },
        { content: `status read ${g}` },
      ],
    });
    await page.getByLabel('Message').fill(`what changed? ${g}`);
    await page.getByRole('button', { name: 'Send' }).click();
    const card = page.locator('section.approval').last();
    await card.getByRole('button', { name: /Approve for this session \(1 h\)/ }).waitFor();
    const scope = await card.locator('.session-scope').innerText();
    expect(scope).toContain('the command git status with any arguments, using only the option --short.');
    for (const width of WIDTHS) {
      await page.setViewportSize({ width, height: 740 });
      // the scope line in the middle of the view (the composer stays at the bottom of narrow screens)
      await card.locator('.session-scope').evaluate((e: Scrollable) => e.scrollIntoView({ block: 'center' }));
      await shot(page, `approval-scope-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
    }
    await card.getByRole('button', { name: 'Reject' }).click();
    await page.getByText(`status read ${g}`).waitFor();
    cli.close();
    await ctx.close();
  });
});
