import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { AuditItem, InboxDto } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { SHOTS, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';
import { until } from '../support/until';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;
const RULE_NOTE = 'touching files needs a human';
const WRITE_SAID =
  'The notes file does not exist yet, so I will create it with the three items you listed: milk, eggs and bread.';
const CMD_SAID = 'Now I will mark the nightly run as finished by touching the stamp file.';

/**
 * The inbox and the audit carry context, in a real browser against the whole stack: each waiting
 * approval names its conversation (a link), the agent, when it asked, what the agent said before the
 * call and the rule that asked, with the diff of a write or the command; the Inbox link counts
 * them; an admin filters the audit by user and decision and reads the rule by name and the
 * conversation by title. At 1280, 375 and 320 px, axe clean, the top bar on one line.
 */
describe('inbox and audit with context in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let rule: string | undefined;
  const titles = { write: 'Shopping notes', cmd: 'Nightly stamp' };
  /** The user of each width's run, for its audit. */
  const users = new Map<number, { api: ApiClient; email: string }>();

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    rule = (
      await admin.post<{ id: string }>('/api/approval/rules', {
        tool_pattern: 'execute_cmd',
        command_pattern: 'touch *',
        action: 'require',
        priority: 5,
        note: RULE_NOTE,
      })
    ).body.id;
  });
  afterAll(async () => {
    if (rule) await admin.request('DELETE', `/api/approval/rules/${rule}`).catch(() => undefined);
    await stopWebStack({ stack, db, browser });
  });

  /** A user whose conversation asks to write a file, then (once that is approved) to run a command. */
  async function userWithWaitingWrite(width: number) {
    const email = `ctx-${width}-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    users.set(width, { api, email });
    const m = `w-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        {
          content: WRITE_SAID,
          tool_calls: [
            { name: 'write_file', arguments: { path: 'notes.md', content: '# Shopping\n\n- milk\n- eggs\n- bread\n' } },
          ],
        },
        { content: CMD_SAID, tool_calls: [{ name: 'execute_cmd', arguments: { command: 'touch nightly.stamp' } }] },
        { content: 'done' },
      ],
    });
    await api.post('/api/web/messages', { client_message_id: randomUUID(), content: `notes ${m}` });
    const inbox = await until('the write to wait', async () => {
      const r = await api.get<InboxDto>('/api/inbox');
      return r.body.approvals.length === 1 ? r.body : undefined;
    });
    await api.request('PATCH', `/api/sessions/${inbox.approvals[0].session_id}`, { title: titles.write });
    return { api, email, sessionId: inbox.approvals[0].session_id };
  }

  async function open(width: number, who: { email: string; password: string }): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, who.email, who.password);
    return page;
  }

  /** The top bar is one row: Sign out sits beside the title, not on a line of its own. */
  async function topBarOnOneLine(page: Page): Promise<void> {
    // measured once the page has settled: right after sign-in the bar may still be laying out
    const offset = async () => {
      const title = await page.getByRole('heading', { name: 'Skald', level: 1 }).boundingBox();
      const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
      return title && signOut ? Math.abs(signOut.y + signOut.height / 2 - (title.y + title.height / 2)) : Infinity;
    };
    await until('the top bar on one row', async () => ((await offset()) < 12 ? true : undefined), 5_000).catch(
      () => undefined,
    );
    const title = await page.getByRole('heading', { name: 'Skald', level: 1 }).boundingBox();
    const signOut = await page.getByRole('button', { name: 'Sign out' }).boundingBox();
    expect(title && signOut).toBeTruthy();
    expect(Math.abs(signOut!.y + signOut!.height / 2 - (title!.y + title!.height / 2))).toBeLessThan(12);
    expect(signOut!.x + signOut!.width).toBeLessThanOrEqual(page.viewportSize()!.width);
  }

  for (const width of WIDTHS) {
    it(`an inbox item names its conversation, agent, time, words before the call and rule; the diff, then the command (${width} px)`, async () => {
      const { api, email, sessionId } = await userWithWaitingWrite(width);
      const page = await open(width, { email, password: PASSWORD });
      await topBarOnOneLine(page);
      // the count on the Inbox link (on a phone: on the menu button)
      const counted =
        width > 720 ? page.getByRole('link', { name: /Inbox/ }) : page.getByRole('button', { name: /Menu/ });
      await until('the badge', async () => /1/.test(await counted.innerText()));
      await page.locator('header.top').screenshot({ path: path.join(SHOTS, `inbox-badge-${width}.png`) });
      await page.goto(`${stack.gatewayUrl}/#inbox`);
      const write = page.locator('li.approval', { hasText: 'write_file' });
      await write.waitFor();
      const [asked] = (await api.get<InboxDto>('/api/inbox')).body.approvals;
      // the conversation by title, linked to its session; the agent; when
      const link = write.getByRole('link', { name: titles.write });
      await expect(link.getAttribute('href')).resolves.toBe(`#session/${sessionId}`);
      await expect(write.locator('.asked').innerText()).resolves.toMatch(/^Asked .+ by .+ in Shopping notes$/);
      await expect(write.locator('.asked .asked-agent').innerText()).resolves.toBe(asked.agent!.name);
      await expect(write.locator('time').getAttribute('datetime')).resolves.toBe(asked.created_at);
      // what the agent said before the call, and the diff
      await expect(write.locator('.context blockquote').innerText()).resolves.toBe(WRITE_SAID);
      await expect(write.getByLabel('proposed change').innerText()).resolves.toContain('- eggs');
      await shot(page, `inbox-diff-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `inbox-diff-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      await write.getByRole('button', { name: 'Approve', exact: true }).click();
      // the command that follows: its words, the rule that asked by name, the command line
      const cmd = page.locator('li.approval', { hasText: 'execute_cmd' });
      await cmd.waitFor({ timeout: 30_000 });
      await api.request('PATCH', `/api/sessions/${sessionId}`, { title: titles.cmd });
      await cmd.getByRole('link', { name: titles.cmd }).waitFor({ timeout: 10_000 });
      await expect(cmd.locator('.context blockquote').innerText()).resolves.toBe(CMD_SAID);
      await expect(cmd.locator('.why').innerText()).resolves.toBe(`Asked by the rule “${RULE_NOTE}”`);
      await expect(cmd.getByLabel('command').innerText()).resolves.toBe('$ touch nightly.stamp');
      await shot(page, `inbox-command-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `inbox-command-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      await page.context().close();
    });

    it(`an admin filters the audit by user and decision; rows name the rule and the conversation (${width} px)`, async () => {
      const page = await open(width, stack.admin);
      await topBarOnOneLine(page);
      await page.goto(`${stack.gatewayUrl}/#admin`);
      await page.getByRole('tab', { name: 'Audit' }).click();
      const filters = page.getByRole('form', { name: 'audit filters' });
      const { api: user, email } = users.get(width)!;
      await filters.getByLabel('User').selectOption({ label: email });
      await filters.getByLabel('Decision').selectOption('require');
      await filters.getByRole('button', { name: 'Filter' }).click();
      const rows = page.locator('table.audit tbody tr');
      await until('the filtered audit', async () => ((await rows.count()) === 2 ? true : undefined));
      const texts = await rows.allInnerTexts();
      expect(texts.every((t) => /require/.test(t))).toBe(true);
      const cmdRow = rows.filter({ hasText: 'execute_cmd' });
      await expect(cmdRow.innerText()).resolves.toContain(`rule “${RULE_NOTE}”`);
      // another user's conversation: its title, linked to the read-only view of it, and whose it is
      await expect(cmdRow.innerText()).resolves.toContain(`${titles.cmd} (${email})`);
      await expect(cmdRow.getByRole('link', { name: titles.cmd }).getAttribute('href')).resolves.toMatch(
        /^#admin\/session\/[0-9a-f-]{36}$/,
      );
      // no rule by its raw id, in the By column or in the gate's note
      expect(texts.join('\n').replaceAll(email, '')).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
      await expect(cmdRow.innerText()).resolves.toContain(
        `touch nightly.stamp: rule “${RULE_NOTE}” (require, priority 5)`,
      );
      await shot(page, `audit-filters-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `audit-filters-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // the same filter over REST: the rows are the user's, each named
      const rest = await admin.get<{ items: AuditItem[] }>(
        `/api/approval/audit?user_id=${user.user!.id}&decision=require&limit=10`,
      );
      expect(rest.body.items.map((i) => [i.tool_name, i.session_title]).sort()).toEqual([
        ['execute_cmd', titles.cmd],
        ['write_file', titles.cmd],
      ]);
      await page.context().close();
    });
  }

  it('a user cannot filter the audit to another user (403 user_id); their own filter works', async () => {
    const { api: user } = users.get(1280)!;
    const other = await user.get<{ error: { code: string; field?: string } }>(
      `/api/approval/audit?user_id=${admin.user!.id}`,
    );
    expect(other).toMatchObject({ status: 403, body: { error: { code: 'forbidden', field: 'user_id' } } });
    const bad = await user.get<{ error: { code: string; field?: string } }>('/api/approval/audit?since=yesterday');
    expect(bad).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'since' } } });
    const own = await user.get<{ items: AuditItem[]; has_more: boolean }>(
      `/api/approval/audit?user_id=${user.user!.id}&tool=execute_cmd&limit=1`,
    );
    expect(own.status).toBe(200);
    expect(own.body.items).toHaveLength(1);
    expect(own.body.items[0]).toMatchObject({ tool_name: 'execute_cmd', session_title: titles.cmd });
  });
});
