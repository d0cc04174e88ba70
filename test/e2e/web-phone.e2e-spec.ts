import { randomUUID } from 'node:crypto';
import type { Browser, Locator, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { foldFrames } from '../../apps/web/src/testing/frames';
import type { ChatState } from '../../apps/web/src/chat-state';
import { DESKTOP, PHONE, seriousViolations, shot, signIn } from '../support/browser';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';
const NARROW = { width: 320, height: 640 };
const WIDTHS = [
  ['1280', DESKTOP],
  ['375', PHONE],
  ['320', NARROW],
] as const;

/**
 * The chat on a phone and after a reload: a waiting card is never under the composer, the
 * navigation is a menu, and the chat rebuilt from `GET /{source}/messages` shows the rows the live
 * one showed — each call's command or path, each approval and how it ended, the attachments.
 */
describe('web client: the phone and the reloaded chat', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    // a machine shared with other test runs may take longer than the default 30 s to start an app
    ({ stack, sim, admin, db, browser } = await startWebStack());
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  async function signedIn(email: string, viewport: { width: number; height: number }, password = PASSWORD) {
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    await signIn(page, stack.gatewayUrl, email, password);
    return { ctx, page };
  }

  /** True when the element's middle is the element itself (or inside it): nothing covers it. */
  async function uncovered(page: Page, el: Locator): Promise<boolean> {
    const box = await el.boundingBox();
    if (!box) return false;
    const vp = page.viewportSize()!;
    if (box.y < 0 || box.y + box.height > vp.height) return false;
    // this file is compiled without the DOM's types: the page's globals as far as used here
    return el.evaluate(
      (node, p) => {
        const doc = (globalThis as unknown as { document: { elementFromPoint(x: number, y: number): unknown } })
          .document;
        const hit = doc.elementFromPoint(p.x, p.y);
        return hit !== null && (hit === node || (node as unknown as { contains(o: unknown): boolean }).contains(hit));
      },
      { x: box.x + box.width / 2, y: box.y + box.height / 2 },
    );
  }

  it('the chat rebuilt from history shows the live rows: commands, paths, approvals and how they ended, attachments', async () => {
    const email = `ph-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const m = `reload-${randomUUID()}`;
    const form = new FormData();
    form.append('file', new Blob(['a,b\n1,2\n'], { type: 'text/csv' }), 'report.csv');
    const up = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}` },
      body: form,
    });
    expect(up.status).toBe(201);
    const attachment = (await up.json()) as Record<string, unknown>;
    await sim.script({
      match: m,
      replies: [
        { content: 'Checking first.', tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo ran-${m}` } }] },
        { tool_calls: [{ name: 'write_file', arguments: { path: 'notes.md', content: 'replaced\n' } }] },
        { content: `Left the notes alone ${m}` },
      ],
    });
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    await ws.waitForType('turn_running');
    const r = await api.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `tidy up ${m}`,
      attachments: [attachment],
    });
    expect(r.status).toBe(202);
    const command = await ws.waitFor((f) => f.type === 'pending_write' && f.kind === 'command');
    ws.send({ type: 'approve_tool', request_id: command.request_id });
    const write = await ws.waitFor(
      (f) => f.type === 'approval_required' || (f.type === 'pending_write' && f.kind === 'file'),
    );
    ws.send({ type: 'reject_tool', request_id: write.request_id, note: 'keep them' });
    await ws.waitFor((f) => f.type === 'done' && f.content === `Left the notes alone ${m}`);
    // the user events of the answers may come after the done: wait for both
    await ws.waitFor((f) => f.type === 'approval_resolved' && f.request_id === write.request_id);
    const live = foldFrames(ws.frames);
    ws.close();

    const page = await api.get<{ items: unknown[]; session_id: string }>('/api/web/messages?limit=200');
    expect(page.status).toBe(200);
    const reloaded = foldFrames([
      { type: 'hello', session_id: page.body.session_id },
      { type: 'history', session_id: page.body.session_id, items: page.body.items, has_more: false },
    ]);
    // what a user reads on each row (file chips are the live view's own: `file_changed` is not history)
    type Row =
      | { key: string; text: string; files?: string[] }
      | { key: string; label: string; status: string }
      | { key: string; call: string; resolved: string | undefined; decision: string | undefined; diff?: string };
    const rows = (st: ChatState): Row[] =>
      st.items.flatMap((i): Row[] =>
        i.kind === 'user'
          ? [{ key: i.key, text: i.content, files: (i.attachments ?? []).map((a) => a.path) }]
          : i.kind === 'assistant'
            ? [{ key: i.key, text: i.content }]
            : i.kind === 'tool'
              ? [{ key: i.key, label: i.label, status: i.status }]
              : i.kind === 'approval'
                ? [
                    {
                      key: i.key,
                      call: i.toolCallId,
                      resolved: i.resolved,
                      decision: JSON.stringify(i.decision),
                      ...(i.path ? { diff: JSON.stringify([i.path, i.oldContent, i.newContent]) } : {}),
                    },
                  ]
                : [],
      );
    expect(rows(reloaded)).toEqual(rows(live));
    const shown = rows(reloaded);
    expect(shown).toContainEqual(expect.objectContaining({ label: `$ echo ran-${m}`, status: 'done' }));
    expect(shown).toContainEqual(expect.objectContaining({ label: 'write_file notes.md', status: 'rejected' }));
    expect(shown.filter((x) => 'resolved' in x).map((x) => x.resolved)).toEqual(['approved', 'rejected']);
    // who answered, where, when: the same record live and reloaded
    type Decided = { by_user_id: string; at: string; channel?: string; bypass?: unknown; note?: string };
    const decisions = shown.flatMap((x) => ('decision' in x && x.decision ? [JSON.parse(x.decision) as Decided] : []));
    expect(decisions.map((d) => [d.by_user_id, d.channel, d.bypass, d.note])).toEqual([
      [api.user!.id, 'card', undefined, undefined],
      [api.user!.id, 'card', undefined, 'keep them'],
    ]);
    // the rejected write shows the diff its card showed, reloaded as live
    expect(shown).toContainEqual(
      expect.objectContaining({
        resolved: 'rejected',
        diff: JSON.stringify(['/workspace/notes.md', '', 'replaced\n']),
      }),
    );
    expect(decisions.every((d) => Date.parse(d.at) > Date.now() - 600_000)).toBe(true);
    expect(shown[0]).toMatchObject({ files: [attachment.path] });

    // the browser, opened after the turn: the same rows on screen
    for (const [width, viewport] of WIDTHS) {
      const { ctx, page: tab } = await signedIn(email, viewport);
      await tab.getByText(`Left the notes alone ${m}`).waitFor();
      await tab.locator('.tool-label', { hasText: `$ echo ran-${m}` }).waitFor();
      await tab.locator('.tool-label', { hasText: 'write_file notes.md' }).waitFor();
      await tab
        .getByRole('region', { name: /approval: Run this command/ })
        .getByText('by you in the chat')
        .waitFor();
      const write = tab.getByRole('region', { name: /approval: Write \/workspace\/notes\.md/ });
      await write.getByText('Rejected').waitFor();
      await write.getByText('Note: keep them').waitFor();
      await write.getByLabel('proposed change').getByText('replaced').waitFor();
      await tab.getByText('report.csv').first().waitFor();
      expect(await tab.getByText('execute_cmd done').count()).toBe(0);
      await tab.getByRole('region', { name: /approval: Run this command/ }).scrollIntoViewIfNeeded();
      await shot(tab, `phone-reloaded-${width}`);
      expect(await seriousViolations(tab)).toEqual([]);
      await ctx.close();
    }
  });

  for (const [width, viewport] of WIDTHS)
    it(`${width} px: a waiting card is never under the composer; the last row neither`, async () => {
      const email = `pc-${randomUUID()}@skald.test`;
      await admin.createUser(email, PASSWORD);
      const m = `card-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo phone-${m}` } }] },
          { content: `done ${m}` },
        ],
      });
      const { ctx, page } = await signedIn(email, viewport);
      // earlier rows so that the card comes at the end of a long page
      for (let i = 0; i < 3; i++) {
        // a marker of its own: one containing `m` would select the card's script
        const n = `fill-${randomUUID()}`;
        await sim.script({
          match: n,
          replies: [{ content: `filler answer ${i}\n\n${'Lorem ipsum dolor. '.repeat(20)}` }],
        });
        await page.getByLabel('Message', { exact: true }).fill(`filler ${n}`);
        await page.getByRole('button', { name: 'Send' }).click();
        await page.getByText(`filler answer ${i}`).waitFor();
      }
      await page.getByLabel('Message', { exact: true }).fill(`run it ${m}`);
      await page.getByRole('button', { name: 'Send' }).click();
      const card = page.getByRole('region', { name: /approval: Run this command/ });
      await card.waitFor();
      const reject = card.getByRole('button', { name: 'Reject' });
      const approve = card.getByRole('button', { name: 'Approve', exact: true });
      await reject.waitFor();
      // the card scrolled itself into view: its heading and its first action are on screen, nothing over them
      await until(
        'the waiting card in view, uncovered',
        async () => (await uncovered(page, approve)) && (await uncovered(page, card.getByRole('heading'))),
        10_000,
      );
      await shot(page, `phone-card-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      // scrolled to its end the page shows Reject uncovered too (the composer stays in the flow while a card waits)
      await reject.scrollIntoViewIfNeeded();
      expect(await uncovered(page, reject)).toBe(true);
      await page.evaluate('window.scrollTo(0, document.documentElement.scrollHeight)');
      expect(await uncovered(page, reject)).toBe(true);
      await approve.click();
      await page.getByText(`done ${m}`).waitFor();
      // a message sent now: its row, at the end, is not under the sticky composer
      await sim.script({
        match: `${m}-last`,
        replies: [{ content: `last answer ${m}`, latency: { firstByteMs: 3000 } }],
      });
      await page.getByLabel('Message', { exact: true }).fill(`one more ${m}-last`);
      await page.getByRole('button', { name: 'Send' }).click();
      const last = page.locator('.timeline li.item.user').last();
      await last.getByText(`one more ${m}-last`).waitFor();
      await until('the last user row uncovered', () => uncovered(page, last.getByText(`one more ${m}-last`)), 10_000);
      await page.getByText(`last answer ${m}`).waitFor();
      await until('the last answer uncovered', () => uncovered(page, page.getByText(`last answer ${m}`)), 10_000);
      await shot(page, `phone-last-row-${width}`);
      await ctx.close();
    });

  it('the navigation is a menu on a phone (every page reachable, Admin included); the admin tables fit', async () => {
    for (const [width, viewport] of WIDTHS) {
      const { ctx, page } = await signedIn(stack.admin.email, viewport, stack.admin.password);
      const menu = page.getByRole('button', { name: 'Menu' });
      const nav = page.getByRole('navigation', { name: 'main' });
      if (width === '1280') {
        expect(await menu.isVisible()).toBe(false);
      } else {
        expect(await nav.getByRole('link', { name: 'Admin' }).isVisible()).toBe(false);
        await menu.click();
        expect(await menu.getAttribute('aria-expanded')).toBe('true');
        await shot(page, `phone-menu-${width}`);
        expect(await seriousViolations(page)).toEqual([]);
      }
      // every link is on screen, whole, and inside the page's width
      for (const name of ['Chat', 'Inbox', 'Jobs', 'MCP', 'TIC', 'Account', 'Admin']) {
        const link = nav.getByRole('link', { name });
        const box = await link.boundingBox();
        expect(box).not.toBeNull();
        expect(box!.x + box!.width).toBeLessThanOrEqual(viewport.width);
      }
      await nav.getByRole('link', { name: 'Admin' }).click();
      // going somewhere closes the menu (the click's navigation renders it closed a moment later)
      if (width !== '1280')
        await until('the menu closed', async () => (await menu.getAttribute('aria-expanded')) === 'false', 5_000);
      await page.getByRole('tab', { name: /rules/i }).click();
      const rules = page.locator('table.rules');
      await rules.waitFor();
      // no sideways scrolling: the page is as wide as the screen
      expect(await page.evaluate<number>('document.documentElement.scrollWidth')).toBeLessThanOrEqual(viewport.width);
      await shot(page, `phone-admin-rules-${width}`);
      expect(await seriousViolations(page)).toEqual([]);
      await ctx.close();
    }
  });
});
