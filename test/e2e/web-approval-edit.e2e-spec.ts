import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import type { AuditItem, InboxDto } from '@skald/contracts';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const WIDTHS = [1280, 375, 320] as const;
const EDITED_NOTE = 'A human edited this tool call before approving it; it ran with the edited arguments:';

/**
 * Edit before approve, in a real browser against the whole stack: a write edited in the chat's
 * card runs with the edited content, the audit names both, and the model reads that a human
 * edited the call and how; in the inbox, an edit to a command a rule denies is refused with the
 * rule's reason while the call still waits, and an allowed edit then runs. At 1280, 375 and 320 px.
 */
describe('edit before approve in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;
  let denyRule: string | undefined;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack());
    // a deny rule on a program nothing else in this stack runs
    const rule = await admin.post<{ id: string }>('/api/approval/rules', {
      tool_pattern: 'execute_cmd',
      command_pattern: 'shred *',
      action: 'deny',
      priority: 5,
      note: 'shredding is never allowed',
    });
    denyRule = rule.body.id;
  });
  afterAll(async () => {
    if (denyRule) await admin.request('DELETE', `/api/approval/rules/${denyRule}`).catch(() => undefined);
    await stopWebStack({ stack, db, browser });
  });

  async function user(width: number): Promise<{ api: ApiClient; page: Page; close: () => Promise<void> }> {
    const email = `e-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const ctx = await browser.newContext({ viewport: { width, height: width < 400 ? 740 : 900 } });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, PASSWORD);
    return { api, page, close: () => ctx.close() };
  }

  const fileOf = (api: ApiClient, name: string): string | null => {
    const f = path.join(stack.env.SKALD_WORKSPACES, api.user!.id, name);
    return existsSync(f) ? readFileSync(f, 'utf8') : null;
  };

  async function until<T>(read: () => T | Promise<T>, ok: (v: T) => boolean, what: string): Promise<T> {
    for (let i = 0; i < 200; i++) {
      const v = await read();
      if (ok(v)) return v;
      await new Promise((r) => setTimeout(r, 100));
    }
    throw new Error(`timed out waiting for ${what}`);
  }

  /** The tool results of the model's request after the edited call. */
  async function toolResults(marker: string): Promise<string[]> {
    const reqs = await until(
      () => sim.requests({ contains: marker }),
      (r) => r.length >= 2,
      'the model to be asked again',
    );
    const second = reqs[1]?.body as { messages: Array<{ role: string; content?: unknown }> };
    return second.messages.filter((x) => x.role === 'tool').map((x) => String(x.content));
  }

  for (const width of WIDTHS) {
    it(`a write edited in the card runs with the edited content; audit and model see both (${width} px)`, async () => {
      const { api, page, close } = await user(width);
      const m = `card-${randomUUID()}`;
      const name = `edit-${width}.txt`;
      await sim.script({
        match: m,
        replies: [
          { tool_calls: [{ name: 'write_file', arguments: { path: name, content: 'written by the agent\n' } }] },
          { content: `done ${m}` },
        ],
      });
      await page.getByLabel('Message').fill(`write it ${m}`);
      await page.getByRole('button', { name: 'Send' }).click();
      const card = page.getByRole('region', { name: new RegExp(`approval: Write /workspace/${name}`) });
      await card.waitFor();
      await card.getByRole('button', { name: 'Edit', exact: true }).click();
      const content = card.getByRole('textbox', { name: 'content' });
      await content.waitFor();
      await expect(content.inputValue()).resolves.toBe('written by the agent\n');
      await content.fill('corrected by a human\n');
      // the preview is recomputed from the edit
      await expect(card.locator('form.edit-call').getByLabel('proposed change').innerText()).resolves.toContain(
        'corrected by a human',
      );
      await card.getByRole('button', { name: 'Approve edited call' }).scrollIntoViewIfNeeded();
      await shot(page, `approval-edit-card-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      await card.getByRole('button', { name: 'Approve edited call' }).click();
      await card.getByText('Approved', { exact: true }).waitFor();

      expect(
        await until(
          () => fileOf(api, name),
          (c) => c !== null,
          'the file',
        ),
      ).toBe('corrected by a human\n');
      // the model read that a human edited the call, and how
      const [result] = await toolResults(m);
      expect(result?.split('\n')[0]).toBe(EDITED_NOTE);
      expect(result).toContain('-written by the agent');
      expect(result).toContain('+corrected by a human');
      // the audit names the human's approval with the original's digest and the edit's
      const audit = await api.get<{ items: AuditItem[] }>('/api/approval/audit?limit=50');
      const human = audit.body.items.find((a) => a.by === 'human' && a.decision === 'approve');
      expect(human?.actor_user_id).toBe(api.user!.id);
      expect(human?.edit?.diff).toContain('+corrected by a human');
      expect(human?.edit?.args_digest).not.toBe(human?.args_digest);
      await page.getByText(`done ${m}`).waitFor();
      await close();
    });

    it(`in the inbox, an edit to a denied command is refused and the call still waits; an allowed edit runs (${width} px)`, async () => {
      const { api, page, close } = await user(width);
      const m = `inbox-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo from-the-agent` } }] },
          { content: `ran ${m}` },
        ],
      });
      await api.post('/api/web/messages', { client_message_id: randomUUID(), content: `run it ${m}` });
      await page.goto(`${stack.gatewayUrl}/#inbox`);
      const item = page.locator('li.card.approval').filter({ hasText: 'execute_cmd' });
      await item.getByRole('button', { name: 'Edit', exact: true }).click();
      const command = item.getByRole('textbox', { name: 'command' });
      await command.fill('shred -u notes.txt');
      await expect(item.getByLabel('edited command').innerText()).resolves.toBe('$ shred -u notes.txt');
      await item.getByRole('button', { name: 'Approve edited call' }).click();
      const refusal = item.getByRole('alert');
      await refusal.waitFor();
      await expect(refusal.innerText()).resolves.toContain('shred -u notes.txt');
      await expect(refusal.innerText()).resolves.toContain('shredding is never allowed');
      await item.getByRole('button', { name: 'Approve edited call' }).scrollIntoViewIfNeeded();
      await shot(page, `approval-edit-inbox-refused-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      // nothing accepted is lost: the request still waits, unanswered
      const inbox = await api.get<InboxDto>('/api/inbox');
      expect(inbox.body.approvals.map((a) => a.arguments)).toEqual([
        expect.objectContaining({ command: 'echo from-the-agent' }),
      ]);

      await command.fill(`echo edited-${width}`);
      await item.getByRole('button', { name: 'Approve edited call' }).click();
      const [result] = await toolResults(m);
      expect(result?.split('\n')[0]).toBe(EDITED_NOTE);
      expect(result).toContain('-echo from-the-agent');
      expect(result).toContain(`edited-${width}`);
      await until(
        () => api.get<InboxDto>('/api/inbox'),
        (i) => i.body.approvals.length === 0,
        'the inbox to empty',
      );
      await close();
    });
  }
});
