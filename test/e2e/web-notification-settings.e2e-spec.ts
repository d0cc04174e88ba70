import { randomUUID } from 'node:crypto';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { NOTIFICATION_CHANNELS, NOTIFICATION_KINDS } from '@skald/contracts';
import { LocalWebhookReceiver } from '@skald/testing/local-receivers';
import { seriousViolations, SHOTS, signIn } from '../support/browser';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';

/**
 * The Notifications page: a kind × channel matrix derived from the contracts, quiet hours, the
 * user's webhooks (the secret shown once, the delivery log, the notice of a disabled one), and the
 * slot where push on this device mounts. Screenshots at 1280, 375 and 320 px; axe finds nothing serious.
 */
describe('web: notification settings', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let receiver: LocalWebhookReceiver;

  beforeAll(async () => {
    receiver = await LocalWebhookReceiver.start();
    ({ stack, sim, admin, db, browser } = await startWebStack({
      readyTimeoutMs: 120_000,
      // One failed delivery disables a webhook, so the page's notice can be seen.
      perApp: { scheduler: { SKALD_WEBHOOK_ALLOW_HOSTS: 'localhost', SKALD_WEBHOOK_DISABLE_AFTER: '1' } },
    }));
  });
  afterAll(async () => {
    await stopWebStack({ stack, db, browser });
    await receiver?.close();
  });

  const cell = (page: Page, kind: RegExp | string, channel: string) =>
    page.getByRole('checkbox', { name: typeof kind === 'string' ? `${kind} by ${channel}` : kind });

  it('change a kind, add a webhook (secret once), see its delivery and a disabled one in the log', async () => {
    const email = `ns-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, PASSWORD);
    await page.getByRole('link', { name: 'Account' }).click();
    await page.getByRole('link', { name: 'Notifications' }).click();
    await page.getByRole('heading', { name: 'Notifications', exact: true }).waitFor();

    // The matrix is the contracts' lists: one row per kind, one column per channel.
    const matrix = page.getByRole('table', { name: 'Which notifications go to which channel' });
    await matrix.waitFor();
    expect(await matrix.getByRole('row').count()).toBe(NOTIFICATION_KINDS.length + 1);
    expect(await matrix.getByRole('columnheader').count()).toBe(NOTIFICATION_CHANNELS.length + 1);
    expect(await matrix.getByRole('checkbox').count()).toBe(NOTIFICATION_KINDS.length * NOTIFICATION_CHANNELS.length);
    await page.getByRole('region', { name: 'Push notifications on this device' }).waitFor();

    // Change a kind: a finished job by e-mail (off by default), with quiet hours.
    const jobMail = cell(page, 'A job finished', 'E-mail');
    expect(await jobMail.isChecked()).toBe(false);
    await jobMail.check();
    await page.getByLabel('Hold e-mail and push during quiet hours (webhooks are never held)').check();
    await page.getByLabel('From').fill('21:30');
    await page.getByLabel('Time zone').selectOption('UTC');
    await page.getByRole('button', { name: 'Save notification settings' }).click();
    await page.getByText('Saved.').waitFor();
    const stored = await api.get<{ channels: { email: string[] }; quiet_hours: unknown }>(
      '/api/notifications/settings',
    );
    expect(stored.body.channels.email).toContain('job_finished');
    expect(stored.body.quiet_hours).toEqual({ start: '21:30', end: '07:00', time_zone: 'UTC' });
    await page.reload();
    expect(await cell(page, 'A job finished', 'E-mail').isChecked()).toBe(true);

    // Add a webhook: the secret shows once.
    await page.getByLabel('Webhook URL').fill(receiver.url(`/ok-${email}`));
    await page.getByRole('button', { name: 'Add webhook' }).click();
    const secret = await page.getByLabel('Signing secret').inputValue();
    expect(secret).toMatch(/^whsec_/);
    await page.getByRole('button', { name: 'Done' }).click();
    expect(await page.getByLabel('Signing secret').count()).toBe(0);
    expect(await page.content()).not.toContain(secret);
    // A second one whose receiver answers 410 Gone: disabled after its first delivery.
    receiver.answer(`/gone-${email}`, (_req, res) => res.writeHead(410).end());
    await page.getByLabel('Webhook URL').fill(receiver.url(`/gone-${email}`));
    await page.getByRole('button', { name: 'Add webhook' }).click();
    await page.getByLabel('Signing secret').waitFor();
    await page.getByRole('button', { name: 'Done' }).click();

    // Something to deliver: an approval in the user's chat.
    const m = randomUUID();
    await sim.script({
      match: `[NS-${m}]`,
      replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo ns-${m}` } }] }, { content: 'ok' }],
    });
    const sent = await api.post('/api/web/messages', { client_message_id: `ns-${m}`, content: `go [NS-${m}]` });
    expect(sent.status).toBeLessThan(300);
    await until(
      'both deliveries',
      () => receiver.hitsOn(`/ok-${email}`).length > 0 && receiver.hitsOn(`/gone-${email}`).length > 0,
    );
    await until('the disabled webhook', async () => {
      const hooks = await api.get<{ items: Array<{ enabled: boolean }> }>('/api/notifications/webhooks');
      return hooks.body.items.some((h) => !h.enabled);
    });

    await page.reload();
    await page.getByRole('button', { name: `Delivery log of ${receiver.url(`/ok-${email}`)}` }).click();
    const log = page.getByRole('table', { name: /Latest deliveries to .*\/ok-/ });
    const row = log.getByRole('row', { name: /An approval waits for you/ });
    await row.waitFor();
    expect(await row.getByRole('cell').nth(2).innerText()).toBe('delivered');
    expect(await row.getByRole('cell').nth(3).innerText()).toBe('1');
    await page.getByText(/Disabled after 1 failed delivery in a row; the last: HTTP 410\b.*\. Add it again/).waitFor();

    for (const width of [1280, 375, 320]) {
      await page.setViewportSize({ width, height: 900 });
      // The page's own content: nothing wider than its column, and no element of it past the viewport's edge
      // (the shell's top bar is measured by the phone specs).
      const overflow = await page.evaluate<number>(
        `(() => { const m = document.querySelector('main.notifications-page'); let right = 0;
          for (const e of m.querySelectorAll('*')) if (!e.closest('.matrix-wrap')) right = Math.max(right, e.getBoundingClientRect().right);
          return Math.max(m.scrollWidth - m.clientWidth, Math.ceil(right - window.innerWidth)); })()`,
      );
      expect(overflow).toBeLessThanOrEqual(0);
      await page.screenshot({ path: path.join(SHOTS, `notification-settings-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
    }
    await ctx.close();
  });
});
