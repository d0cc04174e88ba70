import { randomUUID } from 'node:crypto';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { DESKTOP, PHONE, seriousViolations, shot } from '../support/browser';
import { until } from '../support/until';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(300_000);

const PASSWORD = 'correct horse battery';

/**
 * The chat history is rebuilt from `GET /{source}/messages` (then the socket resumes
 * after the seq the page covers), scrolling to the top loads earlier pages, and `/clear` clears
 * the screen — a reload does not bring the cleared messages back.
 */
describe('web client: history by REST, scroll-back, /clear', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack());
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  async function signedIn(email: string, viewport: { width: number; height: number }) {
    const ctx = await browser.newContext({ viewport, bypassCSP: true });
    const page = await ctx.newPage();
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    return { ctx, page };
  }
  const userRows = (page: Page) => page.locator('.timeline li.item.user');
  const send = async (page: Page, text: string) => {
    await page.getByLabel('Message', { exact: true }).fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };

  /**
   * `n` exchanges through the public API, each answered before the next is sent: the turn's `done`
   * on the user's socket says when (no polling), and the REST history then holds the answer.
   */
  async function converse(api: ApiClient, m: string, n: number): Promise<void> {
    // only the question's own text selects this script (the history holds the marker too)
    await sim.script({ match: m, matchIn: 'last_user', repeatLast: true, replies: [{ content: `answer ${m}` }] });
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: api.token, source: 'web' });
    try {
      for (let i = 0; i < n; i++) {
        const from = ws.frames.length;
        const r = await api.post('/api/web/messages', { client_message_id: randomUUID(), content: `q${i} ${m}` });
        expect(r.status).toBe(202);
        await ws.waitFor((f) => f.type === 'done' && f.content === `answer ${m}`, 60_000, from);
        const page = await api.get<{ items: Array<{ role: string }> }>('/api/web/messages?limit=200');
        expect(page.body.items.filter((x) => x.role === 'assistant')).toHaveLength(i + 1);
      }
    } finally {
      ws.close();
    }
  }

  for (const [screen, viewport] of [
    ['desktop', DESKTOP],
    ['375', PHONE],
  ] as const)
    it(`${screen}: keyboard shortcuts — ? lists them (Esc closes), Ctrl+K focuses search, Enter sends, Esc stops the turn`, async () => {
      const email = `wk-${randomUUID()}@skald.test`;
      await admin.createUser(email, PASSWORD);
      const m = `keys-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [{ content: `slow answer ${m}`, latency: { firstByteMs: 20_000 } }, { content: `next ${m}` }],
      });
      const { ctx, page } = await signedIn(email, viewport);
      // ? outside a text field opens the overlay; typed in the composer it is text
      const composer = page.getByLabel('Message', { exact: true });
      await composer.fill('');
      await composer.press('Shift+Slash');
      expect(await composer.inputValue()).toBe('?');
      await expect(page.getByRole('dialog', { name: 'Keyboard shortcuts' }).isVisible()).resolves.toBe(false);
      await composer.fill('');
      await page.locator('body').click({ position: { x: 5, y: 5 } });
      await page.keyboard.press('Shift+Slash');
      const overlay = page.getByRole('dialog', { name: 'Keyboard shortcuts' });
      await overlay.waitFor();
      expect(await overlay.getByRole('row').count()).toBe(8); // a header and the seven shortcuts
      await shot(page, `shortcuts-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.keyboard.press('Escape');
      await overlay.waitFor({ state: 'hidden' });

      if (screen === 'desktop') {
        await page.keyboard.press('Control+k');
        expect(await page.evaluate<string | undefined>('document.activeElement?.id')).toBe('conversation-search');
      }
      // Enter sends; Esc stops the running turn
      await composer.fill(`hello ${m}`);
      await composer.press('Enter');
      await page.getByRole('button', { name: 'Stop' }).waitFor();
      await page.keyboard.press('Escape');
      await page.getByRole('button', { name: 'Stop' }).waitFor({ state: 'detached', timeout: 20_000 });
      await ctx.close();
    });

  it('open_file: the model calls the tool, the browser opens the viewer on the file, highlighted; the event is in the history', async () => {
    const email = `wo-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const m = `open-${randomUUID()}`;
    const form = new FormData();
    form.append('file', new Blob(['export function add(a: number, b: number) {\n  return a + b;\n}\n']), 'shown.ts');
    const up = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}` },
      body: form,
    });
    expect(up.status).toBe(201);
    const { path: filePath } = (await up.json()) as { path: string };
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ id: 'call_open_1', name: 'open_file', arguments: { path: filePath } }] },
        { content: `There it is ${m}` },
      ],
    });
    const { ctx, page } = await signedIn(email, DESKTOP);
    await send(page, `show me the adder ${m}`);
    const viewer = page.getByRole('dialog', { name: `File ${filePath}` });
    await viewer.locator('.hljs-keyword').first().waitFor({ timeout: 30_000 });
    expect(await viewer.getByLabel('file content').innerText()).toContain('return a + b;');
    await page.getByText(`There it is ${m}`).waitFor();
    // the model was told what happened, not the content
    const followUp = (await sim.requests({ contains: m }))[1]?.body as {
      messages: Array<{ role: string; content: unknown }>;
    };
    expect(followUp.messages.filter((x) => x.role === 'tool').map((x) => String(x.content))).toEqual([
      expect.stringContaining(`Showing ${filePath} to the user.`),
    ]);
    await shot(page, 'open-file-desktop');
    expect(await seriousViolations(page)).toEqual([]);
    // the same viewer on a phone
    await page.setViewportSize(PHONE);
    await viewer.getByLabel('file content').waitFor();
    await shot(page, 'open-file-375');
    expect(await seriousViolations(page)).toEqual([]);
    await ctx.close();
  });

  it('a message sent across a forced socket drop (its ack lost) is re-sent with its client_message_id and appears exactly once', async () => {
    const email = `wr-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const m = `drop-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `answer after the drop ${m}` }] });
    const ctx = await browser.newContext({ viewport: DESKTOP, bypassCSP: true });
    const sentFrames: string[] = [];
    const acks: Array<{ duplicate: boolean }> = [];
    let connections = 0;
    await ctx.routeWebSocket(/\/api\/ws/, (ws) => {
      const server = ws.connectToServer();
      const first = ++connections === 1;
      ws.onMessage((msg) => {
        server.send(msg);
        const text = String(msg);
        if (text.includes('"type":"message"') && text.includes(m)) {
          sentFrames.push(text);
          // the message reached the server; the socket drops before its ack comes back
          if (first) {
            void ws.close({ code: 4000, reason: 'forced drop' });
            void server.close();
          }
        }
      });
      server.onMessage((msg) => {
        const text = String(msg);
        if (text.includes('"type":"ack"')) acks.push(JSON.parse(text) as { duplicate: boolean });
        ws.send(msg);
      });
    });
    const page = await ctx.newPage();
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();

    await send(page, `across the drop ${m}`);
    await page.getByText(`answer after the drop ${m}`).waitFor({ timeout: 30_000 });
    // after the reconnect it is re-sent with the same id (answered as a duplicate), unless its echo
    // came first in the resume's replay — which proves the server has it, so nothing is re-sent
    expect(sentFrames.length).toBeGreaterThanOrEqual(1);
    expect(sentFrames.length).toBeLessThanOrEqual(2);
    const ids = sentFrames.map((f) => (JSON.parse(f) as { client_message_id: string }).client_message_id);
    expect(new Set(ids).size).toBe(1);
    // the re-send's ack may come after the answer it raced with on the new socket: wait for it (bounded)
    if (sentFrames.length === 2) {
      await until('the re-send answered', async () => acks.length > 0, 10_000);
      expect(acks.at(-1)?.duplicate).toBe(true);
    }
    expect(connections).toBeGreaterThanOrEqual(2);
    // exactly once: in the conversation on screen, in the history, to the model. On screen it may
    // briefly be both the outgoing bubble and the echoed row until the re-send's duplicate ack
    // settles the outbox: wait for one, then it must stay one.
    const copies = () =>
      userRows(page)
        .filter({ hasText: `across the drop ${m}` })
        .count();
    await until('one copy of the message on screen', async () => (await copies()) === 1, 10_000);
    await new Promise((r) => setTimeout(r, 1_500));
    expect(await copies()).toBe(1);
    const history = await api.get<{ items: Array<{ content: string }> }>('/api/web/messages');
    expect(history.body.items.filter((i) => i.content.includes(`across the drop ${m}`))).toHaveLength(1);
    expect(await sim.requests({ contains: `across the drop ${m}` })).toHaveLength(1);
    await ctx.close();
  });

  for (const [screen, viewport] of [
    ['1280', DESKTOP],
    ['375', PHONE],
    ['320', { width: 320, height: 640 }],
  ] as const)
    it(`${screen}: a message the gateway refuses shows the refusal on its row, is not re-sent, and Retry asks again`, async () => {
      const email = `wr-${randomUUID()}@skald.test`;
      await admin.createUser(email, PASSWORD);
      const ctx = await browser.newContext({ viewport, bypassCSP: true });
      const page = await ctx.newPage();
      // every message frame the page sends, from its first socket on
      const sent: string[] = [];
      page.on('websocket', (ws) =>
        ws.on('framesent', (f) => {
          if (String(f.payload).startsWith('{"type":"message"')) sent.push(String(f.payload));
        }),
      );
      await page.goto(stack.gatewayUrl);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('connected', { exact: true }).waitFor();
      // longer than a message may be (512 KiB), shorter than a frame (1 MiB): the gateway reads it and refuses it
      const text = `${'x'.repeat(600 * 1024)} refused`;
      await page.getByLabel('Message', { exact: true }).fill(text);
      await page.getByRole('button', { name: 'Send' }).click();
      const refused = page.getByText(/Not sent: .*\(invalid_input\)\./);
      await refused.waitFor();
      // in the middle of the view for the screenshot (the composer stays over the bottom edge)
      await refused.evaluate((el) =>
        (el as unknown as { scrollIntoView(o: { block: string }): void }).scrollIntoView({ block: 'center' }),
      );
      await shot(page, `message-refused-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.waitForTimeout(4_000);
      // no ack timeout re-sends a refused message
      expect(sent).toHaveLength(1);
      await page.getByRole('button', { name: 'Retry' }).click();
      await until('the retry refused again', async () => sent.length === 2 && (await refused.isVisible()), 10_000);
      await ctx.close();
    });

  for (const [screen, viewport] of [
    ['desktop', DESKTOP],
    ['375', PHONE],
  ] as const) {
    it(`${screen}: a message the server never acknowledges shows pending, then failed with a retry that sends it once`, async () => {
      const email = `wf-${randomUUID()}@skald.test`;
      const api = await admin.createUser(email, PASSWORD);
      const m = `lost-${randomUUID()}`;
      await sim.script({ match: m, replies: [{ content: `finally answered ${m}` }] });
      const ctx = await browser.newContext({ viewport, bypassCSP: true });
      // The page's clock is Playwright's: it flows as real time does, and the retry bound (about
      // 20 s of acks that never come) is run through faster below instead of waited out.
      await ctx.clock.install();
      let swallow = true;
      let swallowed = 0;
      await ctx.routeWebSocket(/\/api\/ws/, (ws) => {
        const server = ws.connectToServer();
        ws.onMessage((msg) => {
          if (swallow && String(msg).includes(m)) {
            swallowed++;
            return;
          }
          server.send(msg);
        });
      });
      const page = await ctx.newPage();
      await page.goto(stack.gatewayUrl);
      await page.getByLabel('Email').fill(email);
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in' }).click();
      await page.getByText('connected', { exact: true }).waitFor();

      await send(page, `never acknowledged ${m}`);
      await page.getByText('sending…').waitFor();
      await shot(page, `message-pending-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);
      const failed = page.getByText(/Not sent: the server did not confirm it/);
      // At most 40 s of the page's time, 0.5 s a step, each followed by a real pause in which the
      // SDK's ack timers and React run what the step made due.
      for (let s = 0; s < 80 && !(await failed.isVisible()); s++) {
        await page.clock.runFor(500);
        await page.waitForTimeout(150);
      }
      expect(await failed.isVisible()).toBe(true);
      // bounded (the SDK's ack bound): four sends, then it waits for the user
      expect(swallowed).toBe(4);
      await shot(page, `message-failed-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);
      await page.waitForTimeout(1_000);
      expect(swallowed).toBe(4);

      swallow = false;
      await page.getByRole('button', { name: 'Retry' }).click();
      await page.getByText(`finally answered ${m}`).waitFor();
      expect(await failed.count()).toBe(0);
      expect(await page.getByText(`never acknowledged ${m}`, { exact: true }).count()).toBe(1);
      const history = await api.get<{ items: Array<{ content: string }> }>('/api/web/messages');
      expect(history.body.items.filter((i) => i.content.includes(m)).map((i) => i.content)).toEqual([
        `never acknowledged ${m}`,
        `finally answered ${m}`,
      ]);
      await ctx.close();
    });

    it(`${screen}: the latest page by REST, earlier pages on scroll-back (each row once, the view kept), /clear survives a reload`, async () => {
      const email = `wh-${randomUUID()}@skald.test`;
      const api = await admin.createUser(email, PASSWORD);
      const m = `hist-${randomUUID()}`;
      // 30 exchanges = 60 rows: more than one page of 50
      await converse(api, m, 30);
      const { ctx, page } = await signedIn(email, viewport);

      // the latest 50 rows from REST: q5..q29 (25 questions), the button for the earlier ones
      await page.getByText(`q29 ${m}`).waitFor();
      await until('the first page', async () => (await userRows(page).count()) === 25);
      const more = page.getByRole('button', { name: /earlier messages/ });
      await more.waitFor();
      await shot(page, `history-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);

      // scroll to the top: the earlier page loads before what is shown, the row in view stays put
      const anchor = page.getByText(`q5 ${m}`, { exact: true });
      await page.evaluate('window.scrollTo(0, 0)');
      const before = (await anchor.boundingBox())!.y;
      await page.getByText(`q0 ${m}`, { exact: true }).waitFor();
      await until('all 30 questions', async () => (await userRows(page).count()) === 30);
      const after = (await anchor.boundingBox())!.y;
      expect(Math.abs(after - before)).toBeLessThan(40);
      expect(await more.count()).toBe(0);
      const texts = await userRows(page).allInnerTexts();
      expect(texts.map((t) => t.match(/q(\d+) /)?.[1])).toEqual(Array.from({ length: 30 }, (_, i) => String(i)));
      await shot(page, `history-scrollback-${screen}`);
      expect(await seriousViolations(page)).toEqual([]);

      // a new exchange while the page is shown arrives once (the socket resumed after the page)
      const live = `live-${randomUUID()}`;
      await sim.script({ match: live, matchIn: 'last_user', replies: [{ content: `live answer ${live}` }] });
      await send(page, `question ${live}`);
      await page.getByText(`live answer ${live}`).waitFor();
      expect(await page.getByText(`question ${live}`, { exact: true }).count()).toBe(1);
      await page.reload();
      await page.getByText(`live answer ${live}`).waitFor();
      expect(await page.getByText(`question ${live}`, { exact: true }).count()).toBe(1);
      expect(await page.getByText(`live answer ${live}`, { exact: true }).count()).toBe(1);

      // /clear: the screen empties, and a reload does not bring the cleared messages back
      await send(page, '/clear');
      await page.getByText(/Cleared the conversation/).waitFor();
      await until('an empty screen', async () => (await userRows(page).count()) === 0);
      await shot(page, `history-cleared-${screen}`);
      await page.reload();
      await page.getByText('connected', { exact: true }).waitFor();
      await page.waitForTimeout(1500);
      expect(await userRows(page).count()).toBe(0);
      expect(await page.getByText(`answer ${m}`).count()).toBe(0);
      // the conversation goes on from empty
      const goOn = `after-${randomUUID()}`;
      await sim.script({ match: goOn, matchIn: 'last_user', replies: [{ content: `fresh answer ${goOn}` }] });
      await send(page, `go on ${goOn}`);
      await page.getByText(`fresh answer ${goOn}`).waitFor();
      const seen = (await sim.requests({ contains: goOn }))[0]?.body as {
        messages: Array<{ content: unknown }>;
      };
      expect(JSON.stringify(seen.messages)).not.toContain(`q0 ${m}`);
      await ctx.close();
    });
  }
});
