import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { ChatMessages, InboxDto, SessionList } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { SHOTS, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';
import { until } from '../support/until';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;
const TITLE = 'Nightly stamp';
const ASKED = 'please stamp the nightly run';
const SAID = 'I will mark the nightly run as finished by touching the stamp file.';
const DONE = 'Stamped: nightly.stamp now exists.';

/**
 * An admin follows the audit to another user's conversation, in a real browser against the whole
 * stack: a read-only view with the user's messages, the answers and the approval's outcome, a
 * banner naming whose it is, and nothing that acts (no composer, no approval, edit or regenerate
 * buttons). The user's conversation is unchanged by it; each read is recorded; a non-admin
 * following the same link is refused in words. At 1280, 375 and 320 px, axe clean.
 */
describe("an admin reads another user's conversation from the audit", () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let ann: ApiClient;
  let annEmail: string;
  let sessionId: string;
  /** Ann's conversation as she reads it, before any admin looked at it. */
  let before: { page: ChatMessages; listed: SessionList['items'][number] | undefined };

  const annSees = async () => {
    const page = (await ann.get<ChatMessages>('/api/web/messages?limit=50')).body;
    const listed = (await ann.get<SessionList>('/api/sessions?source=web')).body.items.find((s) => s.id === sessionId);
    return { page, listed };
  };

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    annEmail = `ann-${randomUUID()}@skald.test`;
    ann = await admin.createUser(annEmail, PASSWORD);
    const m = `stamp-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: SAID, tool_calls: [{ name: 'execute_cmd', arguments: { command: 'touch nightly.stamp' } }] },
        { content: DONE },
      ],
    });
    await ann.post('/api/web/messages', { client_message_id: randomUUID(), content: `${ASKED} ${m}` });
    const asked = await until('the command to wait for ann', async () => {
      const r = await ann.get<InboxDto>('/api/inbox');
      return r.body.approvals[0];
    });
    sessionId = asked.session_id;
    await ann.request('PATCH', `/api/sessions/${sessionId}`, { title: TITLE });
    const answered = await ann.post(`/api/inbox/approvals/${asked.request_id}/resolve`, { action: 'approve' });
    expect(answered.status).toBe(200);
    await until('the answer after the command', async () => {
      const page = (await ann.get<ChatMessages>('/api/web/messages')).body;
      return page.items.some((i) => i.role === 'assistant' && i.content === DONE) ? true : undefined;
    });
    // settled: the turn has finished (its last events written), so the page no longer moves
    before = await until('ann’s conversation to settle', async () => {
      const a = await annSees();
      await new Promise((r) => setTimeout(r, 500));
      const b = await annSees();
      return JSON.stringify(a) === JSON.stringify(b) ? b : undefined;
    });
    expect(before.listed?.title).toBe(TITLE);
  });
  afterAll(async () => {
    await stopWebStack({ stack, db, browser });
  });

  async function open(width: number, who: { email: string; password: string }): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, who.email, who.password);
    return page;
  }

  for (const width of WIDTHS) {
    it(`the audit links to a read-only view of ann's conversation: her messages, the approval's outcome, no controls (${width} px)`, async () => {
      const readsBefore = await recordedReads();
      const page = await open(width, stack.admin);
      await page.goto(`${stack.gatewayUrl}/#admin/audit`);
      const filters = page.getByRole('form', { name: 'audit filters' });
      await filters.getByLabel('User').selectOption({ label: annEmail });
      await filters.getByRole('button', { name: 'Filter' }).click();
      const row = page.locator('table.audit tbody tr', { hasText: 'approve' }).first();
      await row.waitFor();
      const link = row.getByRole('link', { name: TITLE });
      await expect(link.getAttribute('href')).resolves.toBe(`#admin/session/${sessionId}`);
      await expect(row.innerText()).resolves.toContain(`(${annEmail})`);
      await link.click();

      const view = page.getByRole('main');
      await view.getByRole('note').filter({ hasText: 'read only' }).waitFor();
      await expect(view.getByRole('note').innerText()).resolves.toBe(`Viewing ${annEmail}’s conversation (read only)`);
      await expect(view.getByRole('heading', { name: TITLE }).count()).resolves.toBe(1);
      const timeline = view.locator('ol.timeline');
      await timeline.getByText(DONE).waitFor();
      await expect(timeline.innerText()).resolves.toContain(ASKED);
      await expect(timeline.innerText()).resolves.toContain(SAID);
      // the approval's outcome: approved by ann (not "by an admin"), with the command it ran
      const card = timeline.locator('section.card.approval');
      await expect(card.locator('.verdict strong').innerText()).resolves.toBe('Approved');
      await expect(card.locator('.verdict .decided').innerText()).resolves.toMatch(
        new RegExp(`^ by ${annEmail.replace(/[.]/g, '\\.')} in the inbox, `),
      );
      await expect(card.locator('pre.command').innerText()).resolves.toBe('$ touch nightly.stamp');
      // nothing that acts: no composer, no answer, edit, regenerate or run-context controls
      expect(await view.getByRole('textbox').count()).toBe(0);
      for (const name of ['Send', 'Approve', 'Reject', 'Edit', 'Regenerate', 'Stop', 'run context'])
        expect(await view.getByRole('button', { name, exact: true }).count()).toBe(0);
      await shot(page, `admin-conversation-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `admin-conversation-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // nothing wider than the screen
      const overflow = await page.evaluate('document.documentElement.scrollWidth - innerWidth');
      expect(overflow).toBeLessThanOrEqual(0);
      // back to the audit, on its tab
      await view.getByRole('link', { name: 'Back to the audit' }).click();
      await page.getByRole('tab', { name: 'Audit', selected: true }).waitFor();
      await page.context().close();

      // each read recorded: the admin, ann's conversation, whose it is
      const readsAfter = await recordedReads();
      expect(readsAfter.length).toBeGreaterThanOrEqual(readsBefore.length + 2);
      expect(new Set(readsAfter.map((r) => `${r.read} of ${r.owner_user_id}`))).toEqual(
        new Set([`session of ${ann.user!.id}`, `messages of ${ann.user!.id}`]),
      );
      // ann's conversation as she reads it: unchanged
      expect(await annSees()).toEqual(before);
    });
  }

  it('a non-admin following the same link is refused in words, and nothing is shown or recorded', async () => {
    const bobEmail = `bob-${randomUUID()}@skald.test`;
    const bob = await admin.createUser(bobEmail, PASSWORD);
    for (const width of WIDTHS) {
      const page = await open(width, { email: bobEmail, password: PASSWORD });
      await page.goto(`${stack.gatewayUrl}/#admin/session/${sessionId}`);
      const alert = page.getByRole('alert');
      await alert.waitFor();
      await expect(alert.innerText()).resolves.toBe("Only an admin can view another user's conversation.");
      await expect(page.getByRole('main').innerText()).resolves.not.toContain(ASKED);
      expect(await page.getByRole('note').count()).toBe(0);
      await shot(page, `admin-conversation-refused-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.context().close();
    }
    const rows = await db.query<unknown[]>(`SELECT 1 FROM admin_session_reads WHERE admin_user_id = $1`, [
      bob.user!.id,
    ]);
    expect(rows).toEqual([]);
    expect(await annSees()).toEqual(before);
  });

  async function recordedReads() {
    return db.query<Array<{ read: string; owner_user_id: string }>>(
      `SELECT read, owner_user_id FROM admin_session_reads WHERE admin_user_id = $1 AND session_id = $2 ORDER BY id`,
      [admin.user!.id, sessionId],
    );
  }
});
