import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { ApprovalRuleDto, AuditItem, InboxDto } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { SHOTS, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';
import { until } from '../support/until';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;
const RULE_NAME = 'stamp files need a human';

/**
 * My approvals, in a real browser against the whole stack: a user who is not an admin opens, from
 * the inbox, the decisions on the calls of their own conversations: the rule that asked by its name
 * (never a raw id, in the By column or the gate's note), their own answer as "you", each
 * conversation a link to it; they filter by decision and tool (there is no user filter), and
 * another user's decisions never appear. Rules carry a name the admin gives (a bad one is refused,
 * 400 naming `name`; a user renames none). At 1280, 375 and 320 px, axe clean.
 */
describe('my approvals in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let rule: ApprovalRuleDto | undefined;
  const people: Record<'ann' | 'bob', { api: ApiClient; email: string; sessionId: string; title: string }> =
    {} as never;

  /** A user whose conversation runs `touch <file>`: the rule asks, and they approve it in the inbox. */
  async function userWithDecidedCall(who: 'ann' | 'bob', title: string) {
    const email = `mine-${who}-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const m = `m-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { content: 'Stamping.', tool_calls: [{ name: 'execute_cmd', arguments: { command: `touch ${who}.stamp` } }] },
        { content: 'done' },
      ],
    });
    await api.post('/api/web/messages', { client_message_id: randomUUID(), content: `stamp ${m}` });
    const inbox = await until('the command to wait', async () => {
      const r = await api.get<InboxDto>('/api/inbox');
      return r.body.approvals.length === 1 ? r.body : undefined;
    });
    const [asked] = inbox.approvals;
    expect(asked.rule?.name).toBe(RULE_NAME);
    await api.request('PATCH', `/api/sessions/${asked.session_id}`, { title });
    const resolved = await api.post(`/api/inbox/approvals/${asked.request_id}/resolve`, { action: 'approve' });
    expect(resolved.status).toBeLessThan(300);
    await until('the approval in the audit', async () => {
      const r = await api.get<{ items: AuditItem[] }>('/api/approval/audit?decision=approve&limit=5');
      return r.body.items.length === 1 ? true : undefined;
    });
    people[who] = { api, email, sessionId: asked.session_id, title };
  }

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({ readyTimeoutMs: 120_000 }));
    rule = (
      await admin.post<ApprovalRuleDto>('/api/approval/rules', {
        name: RULE_NAME,
        tool_pattern: 'execute_cmd',
        command_pattern: 'touch *',
        action: 'require',
        priority: 5,
        note: 'a stamp marks a run as done: a person says when',
      })
    ).body;
    expect(rule.name).toBe(RULE_NAME);
    await userWithDecidedCall('ann', 'Ann stamps the run');
    await userWithDecidedCall('bob', 'Bob private chat');
  });
  afterAll(async () => {
    if (rule) await admin.request('DELETE', `/api/approval/rules/${rule.id}`).catch(() => undefined);
    await stopWebStack({ stack, db, browser });
  });

  async function open(width: number, email: string, password = PASSWORD): Promise<Page> {
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, password);
    return page;
  }

  it('a rule name is the admin’s to give: a bad one is refused naming `name`, a user renames none', async () => {
    for (const name of ['   ', 'two\nlines', 'x'.repeat(81), 'bell\u0007'])
      expect(
        await admin.post('/api/approval/rules', { name, tool_pattern: 'x', action: 'deny', priority: 1 }),
      ).toMatchObject({ status: 400, body: { error: { code: 'invalid_input', field: 'name' } } });
    const renamed = await people.ann.api.request('PATCH', `/api/approval/rules/${rule!.id}`, { name: 'mine now' });
    expect(renamed.status).toBe(403);
    const listed = await admin.get<{ items: ApprovalRuleDto[] }>('/api/approval/rules');
    expect(listed.body.items.find((r) => r.id === rule!.id)?.name).toBe(RULE_NAME);
  });

  for (const width of WIDTHS) {
    it(`a user reads and filters their own decided approvals, named and linked, and no one else's (${width} px)`, async () => {
      const { ann, bob } = people;
      const page = await open(width, ann.email);
      await page.goto(`${stack.gatewayUrl}/#inbox`);
      await page.getByRole('link', { name: 'My approvals' }).click();
      await page.getByRole('heading', { name: 'My approvals', level: 2 }).waitFor();
      const filters = page.getByRole('form', { name: 'audit filters' });
      expect(await filters.getByLabel('User').count()).toBe(0);
      const rows = page.locator('table.audit tbody tr');
      await until('her decisions', async () => ((await rows.count()) >= 2 ? true : undefined));
      const texts = (await rows.allInnerTexts()).join('\n');
      expect(texts).not.toContain(bob.title);
      expect(texts).not.toContain('bob.stamp');
      // the rule by name, in the By column and in the gate's note; no raw id anywhere
      expect(texts).toContain(`rule “${RULE_NAME}”`);
      expect(texts).toContain(`touch ann.stamp: rule “${RULE_NAME}” (require, priority 5)`);
      expect(texts).not.toMatch(/[0-9a-f]{8}-[0-9a-f]{4}-/);
      await shot(page, `my-approvals-all-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `my-approvals-all-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // her answer: by "you", the conversation a link to it
      await filters.getByLabel('Decision').selectOption('approve');
      await filters.getByRole('button', { name: 'Filter' }).click();
      await until('the approvals only', async () => ((await rows.count()) === 1 ? true : undefined));
      const approved = rows.first();
      await expect(approved.innerText()).resolves.toMatch(/you in the inbox/);
      const link = approved.getByRole('link', { name: ann.title });
      await expect(link.getAttribute('href')).resolves.toBe(`#session/${ann.sessionId}`);
      await shot(page, `my-approvals-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `my-approvals-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      // a tool that never ran here: nothing
      await filters.getByLabel('Decision').selectOption('');
      await filters.getByLabel('Tool').fill('write_file');
      await filters.getByRole('button', { name: 'Filter' }).click();
      await page.getByText('No decision matches these filters.').waitFor();
      await filters.getByRole('button', { name: 'Clear' }).click();
      await until('every decision again', async () => ((await rows.count()) >= 2 ? true : undefined));
      // the link opens the conversation
      await rows.getByRole('link', { name: ann.title }).first().click();
      await until('the conversation', async () =>
        page.url().endsWith(`#session/${ann.sessionId}`) ? true : undefined,
      );
      await page.context().close();
    });
  }

  for (const width of WIDTHS)
    it(`an admin names a rule in the console; the rules table shows every rule's name (${width} px)`, async () => {
      const page = await open(width, stack.admin.email, stack.admin.password);
      await page.goto(`${stack.gatewayUrl}/#admin`);
      const table = page.locator('table.rules');
      await table.getByText(RULE_NAME, { exact: true }).waitFor();
      const form = page.getByRole('form', { name: 'new rule' });
      const named = `lab probes need a human ${width}`;
      await form.getByLabel('Name').fill(`  ${named}  `);
      await form.getByLabel('Tool pattern').fill(`lab_probe_${width}`);
      await form.getByRole('button', { name: 'Add rule' }).click();
      const row = table.locator('tr', { hasText: named });
      await row.waitFor();
      const nameCell = row.locator('td.rule-name');
      await expect(nameCell.locator('.rule-name-view > span').innerText()).resolves.toBe(named);
      await nameCell.getByRole('button', { name: `rename rule “${named}”` }).waitFor();
      // a rule added without a name is called by what it matches
      await form.getByLabel('Tool pattern').fill(`lab_unnamed_${width}`);
      await form.getByRole('button', { name: 'Add rule' }).click();
      await table.getByText(`require lab_unnamed_${width}`, { exact: true }).waitFor();
      await shot(page, `rules-named-${width}`);
      await page.screenshot({ path: path.join(SHOTS, `rules-named-full-${width}.png`), fullPage: true });
      expect(await seriousViolations(page)).toEqual([]);
      for (const r of [named, `require lab_unnamed_${width}`])
        await row
          .page()
          .getByRole('button', { name: `delete rule “${r}”` })
          .click();
      await until('the lab rules gone', async () =>
        (await table.getByText(/lab_(probe|unnamed)_/).count()) === 0 ? true : undefined,
      );
      await page.context().close();
    });

  it('over REST a user’s audit is their own: another user’s is 403, and the rows are named', async () => {
    const { ann, bob } = people;
    const other = await ann.api.get<{ error: { code: string; field?: string } }>(
      `/api/approval/audit?user_id=${bob.api.user!.id}`,
    );
    expect(other).toMatchObject({ status: 403, body: { error: { code: 'forbidden', field: 'user_id' } } });
    const own = await ann.api.get<{ items: AuditItem[] }>('/api/approval/audit?tool=execute_cmd&limit=50');
    expect(own.body.items.length).toBeGreaterThanOrEqual(2);
    expect(own.body.items.every((i) => i.user_id === ann.api.user!.id)).toBe(true);
    const asked = own.body.items.find((i) => i.decision === 'require');
    expect(asked).toMatchObject({ rule_id: rule!.id, rule_name: RULE_NAME });
  });
});
