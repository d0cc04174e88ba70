import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import { type Browser, type BrowserContext, type Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { ROOT } from '../support/db';
import { SHOTS } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(180_000);

const PASSWORD = 'correct horse battery';

/** The web client in headless Chromium against the whole stack. */
describe('web client in a real browser', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack());
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  async function signedIn(viewport = { width: 1280, height: 900 }): Promise<{
    api: ApiClient;
    ctx: BrowserContext;
    page: Page;
  }> {
    const email = `w-${randomUUID()}@skald.test`;
    const api = await admin.createUser(email, PASSWORD);
    const ctx = await browser.newContext({ viewport });
    const page = await ctx.newPage();
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    return { api, ctx, page };
  }

  const send = async (page: Page, text: string) => {
    await page.getByLabel('Message').fill(text);
    await page.getByRole('button', { name: 'Send' }).click();
  };
  const fileOf = (api: ApiClient, name: string): string =>
    readFileSync(path.join(stack.env.SKALD_WORKSPACES, api.user!.id, name), 'utf8');

  it('serves the client under a strict Content-Security-Policy', async () => {
    const res = await fetch(stack.gatewayUrl);
    expect(res.status).toBe(200);
    const csp = res.headers.get('content-security-policy') ?? '';
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("default-src 'none'");
    expect(csp).not.toContain('unsafe-inline');
    expect(res.headers.get('x-content-type-options')).toBe('nosniff');
  });

  it('log in, watch the stream, approve a write from its diff (keyboard only) and see the file changed', async () => {
    const { api, ctx, page } = await signedIn();
    await page.screenshot({ path: path.join(SHOTS, 'chat-empty.png') });
    const m = `web-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'plan.md', content: '# Plan\nship it\n' } }] },
        { content: `**Written** the plan ${m}` },
      ],
    });
    await send(page, `write the plan ${m}`);
    const card = page.getByRole('region', { name: /approval: Write \/workspace\/plan\.md/ });
    await card.waitFor();
    await expect(card.getByLabel('proposed change').innerText()).resolves.toContain('ship it');
    await page.screenshot({ path: path.join(SHOTS, 'approval-diff.png') });
    // keyboard alone: focus the first action of the card and press Enter
    await card.getByRole('button', { name: 'Approve', exact: true }).focus();
    await page.keyboard.press('Enter');
    await page.getByText('Approved').waitFor();
    await page.locator('.assistant-bubble strong', { hasText: 'Written' }).waitFor();
    expect(fileOf(api, 'plan.md')).toBe('# Plan\nship it\n');
    await page.screenshot({ path: path.join(SHOTS, 'chat-done.png') });
    await ctx.close();
  });

  it('keyboard shortcuts on approval cards: A approves the focused card, R rejects it (and neither fires while typing)', async () => {
    const { api, ctx, page } = await signedIn();
    const m = `keys-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'a.md', content: 'approved by A\n' } }] },
        { tool_calls: [{ name: 'write_file', arguments: { path: 'r.md', content: 'rejected by R\n' } }] },
        { content: `both answered ${m}` },
      ],
    });
    await send(page, `two writes ${m}`);
    const first = page.getByRole('region', { name: /approval: Write \/workspace\/a\.md/ });
    await first.waitFor();
    // Typing an "a" in the composer is text, not a shortcut: the card stays open.
    await page.getByRole('textbox').first().focus();
    await page.keyboard.press('a');
    await expect(first.getByText('Approved', { exact: true }).count()).resolves.toBe(0);
    await first.focus();
    await page.keyboard.press('a');
    await first.getByText('Approved', { exact: true }).waitFor();
    const second = page.getByRole('region', { name: /approval: Write \/workspace\/r\.md/ });
    await second.waitFor();
    await second.focus();
    await page.keyboard.press('r');
    await second.getByText('Rejected', { exact: true }).waitFor();
    await page.getByText(`both answered ${m}`).waitFor();
    expect(fileOf(api, 'a.md')).toBe('approved by A\n');
    expect(() => fileOf(api, 'r.md')).toThrow();
    await ctx.close();
  });

  it('the answer streams in: its first words are on screen before its last ones arrive', async () => {
    const { ctx, page } = await signedIn();
    const m = `stream-${randomUUID()}`;
    const words = Array.from({ length: 30 }, (_, i) => `w${i}`).join(' ');
    await sim.script({
      match: m,
      replies: [{ content: `${words} END-${m}`, chunkSize: 6, latency: { betweenChunksMs: 120 } }],
    });
    await send(page, `stream ${m}`);
    await page.getByText('w0 w1 w2', { exact: false }).waitFor();
    expect(await page.getByText(`END-${m}`).count()).toBe(0);
    await page.getByText(`END-${m}`, { exact: false }).waitFor();
    await ctx.close();
  });

  it('slash commands answer inline and never reach the model', async () => {
    const { ctx, page } = await signedIn();
    const before = (await sim.requests()).length;
    await send(page, '/help');
    await page.getByText(/\/compact\s+fold the older messages/).waitFor();
    await send(page, '/nonsense');
    await page.getByText('Unknown command /nonsense.', { exact: false }).waitFor();
    expect((await sim.requests()).length).toBe(before);
    await ctx.close();
  });

  it('reject with a note: the agent answers to the note', async () => {
    const { api, ctx, page } = await signedIn();
    const m = `rej-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'write_file', arguments: { path: 'x.md', content: 'nope' } }] },
        { content: `OK, I will keep x.md as it is ${m}` },
      ],
    });
    await send(page, `overwrite x ${m}`);
    const card = page.getByRole('region', { name: /approval:/ });
    await card.waitFor();
    await card.getByLabel('Note').fill('keep my file');
    await card.getByRole('button', { name: 'Reject' }).click();
    await page.getByText(`OK, I will keep x.md as it is ${m}`).waitFor();
    const bodies = (await sim.requests({ contains: m })).map((r) => JSON.stringify(r.body));
    expect(bodies[1]).toContain('User rejected this tool call. Reason: keep my file');
    expect(existsSync(path.join(stack.env.SKALD_WORKSPACES, api.user!.id, 'x.md'))).toBe(false);
    await ctx.close();
  });

  it('model text and tool output are untrusted: no planted script runs, no javascript: link survives', async () => {
    const { api, ctx, page } = await signedIn();
    const ws = path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
    mkdirSync(ws, { recursive: true });
    writeFileSync(
      // a text file (an .html file is read as its extracted text, which keeps no markup)
      path.join(ws, 'evil.txt'),
      "<img src=x onerror=\"window.__pwned='tool'\"><script>window.__pwned='tool2'</script>",
    );
    const m = `xss-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'read_file', arguments: { path: 'evil.txt' } }] },
        {
          content:
            `Here ${m} <img src=x onerror="window.__pwned='model'"> <script>window.__pwned='model2'</script> ` +
            `[click me](javascript:window.__pwned='link') [safe](https://example.com/)`,
        },
      ],
    });
    await send(page, `show evil ${m}`);
    await page.getByRole('link', { name: 'safe' }).waitFor();
    await page.locator('.tool summary').first().click();
    await page.getByText('onerror', { exact: false }).first().waitFor(); // the tool output is shown as text
    expect(await page.evaluate(() => (globalThis as unknown as { __pwned?: string }).__pwned)).toBeUndefined();
    expect(await page.locator('.timeline img, .timeline script').count()).toBe(0);
    const hrefs = await Promise.all((await page.locator('.timeline a').all()).map((a) => a.getAttribute('href')));
    expect(hrefs).toEqual([null, 'https://example.com/']);
    await ctx.close();
  });

  it('stop during a long command; reload mid-turn and lose nothing', async () => {
    const { ctx, page } = await signedIn();
    const m = `stop-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo started-${m}; sleep 60`, timeout: 90 } }] },
      ],
    });
    await sim.script({ match: `run-${m}`, replies: [{ content: 'unused' }] });
    // execute_cmd asks first: approve it, then reload while the command runs
    await send(page, `long ${m}`);
    const card = page.getByRole('region', { name: /approval: Run this command/ });
    await card.waitFor();
    await card.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText('running', { exact: true }).waitFor();
    await page.reload();
    await page.getByText('connected', { exact: true }).waitFor();
    // after the reload the conversation is all there once, and the stop button is back
    // (the history page and the replay after it arrive apart: wait for both, then count)
    await page.getByText(`long ${m}`).waitFor();
    await page.locator('section.approval').first().waitFor();
    expect(await page.getByText(`long ${m}`).count()).toBe(1);
    expect(await page.locator('section.approval').count()).toBe(1);
    await page.getByText('Approved').waitFor();
    const stop = page.getByRole('button', { name: 'Stop' });
    await stop.waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'running-after-reload.png') });
    await stop.click();
    await page.getByText('cancelled', { exact: true }).waitFor();
    await stop.waitFor({ state: 'detached' });
    await ctx.close();
  });

  it('"approve for this session" on the card opens only this command for an hour: git status runs again unasked, git push asks, expired it asks again', async () => {
    const { api, ctx, page } = await signedIn();
    const m = `scope-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git status' } }] },
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git status' } }] },
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git push' } }] },
        { content: `pushed or not ${m}` },
      ],
    });
    await send(page, `check ${m}`);
    const cards = page.locator('section.approval');
    const first = cards.first();
    await first.waitFor();
    const session = first.getByRole('button', { name: /Approve for this session \(1 h\)/ });
    await session.waitFor();
    // the scope and the expiry are spelled out on the card
    const scope = await first.locator('.session-scope').innerText();
    expect(scope).toMatch(/Until \d\d:\d\d/);
    expect(scope).toContain('the command git status with any arguments and no options');
    await page.screenshot({ path: path.join(SHOTS, 'approval-session-scope.png') });
    // the command card at a desktop's, a phone's and the narrowest width
    for (const [width, name] of [
      [1280, 'approval-command'],
      [375, 'approval-command-375'],
      [320, 'approval-command-320'],
    ] as const) {
      await page.setViewportSize({ width, height: 900 });
      await first.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await session.click();
    // the second git status ran without a card; git push asks
    await cards.nth(1).waitFor();
    await expect(cards.nth(1).locator('pre.command').innerText()).resolves.toContain('git push');
    expect(await cards.count()).toBe(2);
    await cards.nth(1).getByRole('button', { name: 'Reject' }).click();
    await page.getByText(`pushed or not ${m}`).waitFor();
    const bypasses = await api.get<{
      items: Array<{ id: string; scope: unknown; expires_at?: string; created_at: string }>;
    }>('/api/approval/bypasses');
    expect(bypasses.body.items).toHaveLength(1);
    expect(bypasses.body.items[0].scope).toEqual({
      tool: 'execute_cmd',
      program: 'git',
      subcommand: 'status',
      options: [],
    });
    const life = Date.parse(bypasses.body.items[0].expires_at ?? '') - Date.parse(bypasses.body.items[0].created_at);
    expect(Math.abs(life - 3600_000)).toBeLessThan(10_000);

    // an hour later (the database clock is moved by expiring the row): git status asks again
    await db.query(`UPDATE approval_bypasses SET expires_at = now() - interval '1 second' WHERE id = $1`, [
      bypasses.body.items[0].id,
    ]);
    const m2 = `expired-${randomUUID()}`;
    await sim.script({
      match: m2,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: 'git status' } }] },
        { content: `again ${m2}` },
      ],
    });
    await send(page, `check ${m2}`);
    await cards.nth(2).waitFor();
    await expect(cards.nth(2).locator('pre.command').innerText()).resolves.toContain('git status');
    await cards.nth(2).getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText(`again ${m2}`).waitFor();
    await ctx.close();
  });

  it("an admin's rule change in the console takes effect; a non-admin cannot reach admin pages or APIs", async () => {
    // the admin signs in and adds a Deny for a marker command with the console
    const ctx = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(stack.admin.email);
    await page.getByLabel('Password').fill(stack.admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    await page.getByRole('link', { name: 'Admin' }).click();
    // the built-in memory rules come first, read-only: no Delete button on their rows
    const builtIn = page.locator('tr.built-in');
    await builtIn.first().waitFor();
    expect(await builtIn.count()).toBe(2);
    await expect(builtIn.first().innerText()).resolves.toContain('shared-memory/*');
    expect(await builtIn.getByRole('button').count()).toBe(0);
    expect(await builtIn.getByText('read-only').count()).toBe(2);
    const marker = `forbidden-${randomUUID().slice(0, 8)}`;
    const form = page.getByRole('form', { name: 'new rule' });
    await form.getByLabel('Tool pattern').fill('execute_cmd');
    await form.getByLabel('Command pattern').fill(`${marker}*`);
    await form.getByLabel('Action').selectOption('deny');
    await form.getByLabel('Priority').fill('1');
    await form.getByRole('button', { name: 'Add rule' }).click();
    await page.getByRole('cell', { name: `${marker}*`, exact: true }).waitFor();
    const tester = page.getByRole('form', { name: 'rule tester' });
    await tester.getByLabel('Arguments (JSON)').fill(JSON.stringify({ command: `${marker} now` }));
    await tester.getByRole('button', { name: 'Test' }).click();
    await tester.getByText(/^deny/).waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'admin-rules.png') });
    // an allow rule that can never allow anything says why, under the form and in the list
    await form.getByLabel('Tool pattern').fill('execute_cmd');
    await form.getByLabel('Command pattern').fill('git *');
    await form.getByLabel('Action').selectOption('allow');
    await form.getByLabel('Priority').fill('2');
    await form.getByRole('button', { name: 'Add rule' }).click();
    await form.getByText(/^Rule created, but it never allows anything: git with every other invocation/).waitFor();
    const gitRow = page.getByRole('row').filter({ hasText: 'git *' }).filter({ hasText: 'never allows' });
    await expect(gitRow.innerText()).resolves.toMatch(/allow — never allows: git with every other invocation/);
    await expectNoSeriousViolations(page, 'admin-rules');
    for (const [width, name] of [
      [1280, 'admin-rule-never-allows'],
      [375, 'admin-rule-never-allows-375'],
      [320, 'admin-rule-never-allows-320'],
    ] as const) {
      await page.setViewportSize({ width, height: 900 });
      await gitRow.scrollIntoViewIfNeeded();
      await page.screenshot({ path: path.join(SHOTS, `${name}.png`) });
    }
    await page.setViewportSize({ width: 1280, height: 900 });
    await gitRow.getByRole('button', { name: /^delete rule/ }).click();
    await gitRow.waitFor({ state: 'detached' });
    for (const tab of ['Tools', 'Audit', 'Users']) {
      await page.getByRole('tab', { name: tab }).click();
      await page.getByRole('table').first().waitFor();
      await page.screenshot({ path: path.join(SHOTS, `admin-${tab.toLowerCase()}.png`) });
    }
    await ctx.close();

    // a user's agent now cannot run that command: the gate denies it without asking
    const user = await signedIn();
    const m = `deny-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `${marker} now` } }] },
        { content: `denied ${m}` },
      ],
    });
    await send(user.page, `try ${m}`);
    await user.page.getByText(`denied ${m}`).waitFor();
    expect(await user.page.locator('section.approval').count()).toBe(0);
    await user.page.locator('.tool summary').first().click();
    await expect(user.page.locator('.tool').first().innerText()).resolves.toMatch(/rejected|failed|denied/i);
    // the non-admin: no Admin link, the page refuses, the API answers 403
    expect(await user.page.getByRole('link', { name: 'Admin' }).count()).toBe(0);
    await user.page.goto(`${stack.gatewayUrl}/#admin`);
    await user.page.getByText('Only administrators may open the admin console.').waitFor();
    expect((await user.api.get('/api/approval/rules')).status).toBe(403);
    expect(
      (await user.api.post('/api/approval/rules', { tool_pattern: 'x', action: 'allow', priority: 1 })).status,
    ).toBe(403);
    // the other screens of a user, for the record
    await user.page.goto(`${stack.gatewayUrl}/#mcp`);
    await user.page.getByRole('heading', { name: 'MCP servers' }).waitFor();
    await user.page.screenshot({ path: path.join(SHOTS, 'mcp.png') });
    await user.page.goto(`${stack.gatewayUrl}/#chat`);
    await user.page.getByRole('link', { name: 'session details' }).click();
    await user.page.getByRole('button', { name: 'Back' }).waitFor();
    await user.page.getByText(`try ${m}`).waitFor();
    await user.page.screenshot({ path: path.join(SHOTS, 'session-debug.png') });
    await user.ctx.close();
  });

  it('MCP page: a server is disabled and enabled in place, its status follows; desktop and phone widths', async () => {
    const { api, ctx, page } = await signedIn();
    const name = `w${randomUUID().slice(0, 6)}`;
    expect((await api.post('/api/mcp/servers', { name, transport: 'stdio', command: 'true' })).status).toBe(201);
    await page.goto(`${stack.gatewayUrl}/#mcp`);
    const card = page.locator('li.card', { has: page.getByRole('heading', { name: new RegExp(name) }) });
    await card.locator('.status', { hasText: 'stopped' }).waitFor();
    await card.getByRole('button', { name: `Disable ${name}` }).click();
    await card.locator('.status', { hasText: 'disabled' }).waitFor();
    expect((await api.get<{ items: Array<{ enabled: boolean }> }>('/api/mcp/servers')).body.items[0].enabled).toBe(
      false,
    );
    for (const width of [1280, 375, 320]) {
      await page.setViewportSize({ width, height: 900 });
      await card.getByRole('button', { name: `Enable ${name}` }).waitFor();
      await page.screenshot({ path: path.join(SHOTS, `mcp-disabled-${width}.png`), fullPage: true });
    }
    await card.getByRole('button', { name: `Enable ${name}` }).click();
    await card.locator('.status', { hasText: 'stopped' }).waitFor();
    expect((await api.get<{ items: Array<{ enabled: boolean }> }>('/api/mcp/servers')).body.items[0].enabled).toBe(
      true,
    );
    // The form asks every field of a stdio server: command, arguments, network, environment.
    await page.setViewportSize({ width: 1280, height: 900 });
    const added = `n${randomUUID().slice(0, 6)}`;
    await page.getByLabel('Name').fill(added);
    await page.getByLabel('Command').fill('node');
    await page.getByLabel('Arguments').fill('server.js --stdio');
    await page.getByLabel('Network access (only where the operator allows it)').check();
    await page.getByLabel(/^Environment/).fill('API_TOKEN=t0ken');
    await page.getByRole('button', { name: 'Add server' }).click();
    const addedCard = page.locator('li.card', { has: page.getByRole('heading', { name: new RegExp(added) }) });
    await addedCard.getByText('network asked').waitFor();
    const listed = (await api.get<{ items: Array<Record<string, unknown>> }>('/api/mcp/servers')).body.items.find(
      (s) => s.name === added,
    );
    expect(listed).toMatchObject({
      transport: 'stdio',
      command: 'node',
      args: ['server.js', '--stdio'],
      network: true,
      env_keys: ['API_TOKEN'],
    });
    for (const width of [1280, 375, 320]) {
      await page.setViewportSize({ width, height: 900 });
      await page.screenshot({ path: path.join(SHOTS, `mcp-form-${width}.png`), fullPage: true });
    }
    await ctx.close();
  });

  it('jobs page: add a cron job, run it now and see its run and result; a background task shows on the strip until it reports', async () => {
    const { ctx, page } = await signedIn();
    const m = `cronweb-${randomUUID()}`;
    await sim.script({ match: `[J-${m}]`, replies: [{ content: `Inbox summary ${m}` }] });
    await page.getByRole('link', { name: 'Jobs' }).click();
    const form = page.getByRole('form', { name: 'new job' });
    await form.getByLabel('Title').fill(`Morning ${m.slice(-6)}`);
    await form.getByLabel('Schedule (cron)').fill('0 7 * * *');
    await form.getByLabel('Time zone').fill('Europe/Oslo');
    await form.getByLabel('What the agent should do').fill(`Summarise my inbox [J-${m}]`);
    await form.getByRole('button', { name: 'Add job' }).click();
    await page
      .getByRole('cell', { name: `Morning ${m.slice(-6)}`, exact: true })
      .first()
      .waitFor();
    await page.getByRole('button', { name: `Run now Morning ${m.slice(-6)}` }).click();
    await page.getByRole('cell', { name: `Inbox summary ${m}` }).waitFor({ timeout: 60_000 });
    await page.getByRole('link', { name: 'succeeded' }).first().waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'cron.png') });
    await page.getByRole('link', { name: 'TIC' }).click();
    await page.getByRole('button', { name: 'Run the tick now' }).click();
    await page.getByText(/^Started/).waitFor();
    // the tick's session is listed and opens its debug view
    const ticRow = page.getByRole('table', { name: 'TIC sessions' }).getByRole('link').first();
    await ticRow.waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(SHOTS, 'tic.png') });
    await ticRow.click();
    await page.getByRole('button', { name: 'Back' }).waitFor();
    await page.getByRole('button', { name: 'Back' }).click();
    await page.getByRole('table', { name: 'TIC sessions' }).waitFor();

    // back in the chat: a background task on the strip while it runs
    await page.getByRole('link', { name: 'Chat' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    const t = `task-${randomUUID()}`;
    await sim.script({
      match: `[P-${t}]`,
      replies: [
        {
          tool_calls: [
            {
              name: 'execute_task',
              arguments: { agent_id: 'generalist', prompt: `Dig [C-${t}]`, title: 'Dig deep', mode: 'async' },
            },
          ],
        },
        { content: 'Started it in the background.' },
        { content: `The task found it ${t}` },
      ],
    });
    await sim.script({ match: `[C-${t}]`, replies: [{ content: 'found', latency: { firstByteMs: 4000 } }] });
    await send(page, `research [P-${t}]`);
    // delegating needs approval by the default rules
    const ask = page.getByRole('region', { name: /approval: Allow execute_task/ });
    await ask.getByRole('button', { name: 'Approve', exact: true }).click();
    const strip = page.getByRole('list', { name: 'background tasks' });
    await strip.getByText('Dig deep').waitFor({ timeout: 30_000 });
    await page.screenshot({ path: path.join(SHOTS, 'task-strip.png') });
    await page.getByText(`The task found it ${t}`).waitFor({ timeout: 60_000 });
    await strip.waitFor({ state: 'detached' });
    await ctx.close();
  });

  it('resolve from the inbox in a second tab; phone width; axe finds no serious violation', async () => {
    const { ctx, page } = await signedIn({ width: 375, height: 740 });
    const m = `inbox-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'execute_cmd', arguments: { command: `echo from-inbox-${m}` } }] },
        { content: `ran it ${m}` },
      ],
    });
    await send(page, `run ${m}`);
    await page.getByRole('region', { name: /approval: Run this command/ }).waitFor();
    await page.screenshot({ path: path.join(SHOTS, 'phone-approval.png') });
    const tab = await ctx.newPage();
    await tab.goto(`${stack.gatewayUrl}/#inbox`);
    await tab.getByRole('heading', { name: 'Agent inbox' }).waitFor();
    await tab.screenshot({ path: path.join(SHOTS, 'inbox.png') });
    await tab.getByRole('button', { name: 'Approve', exact: true }).click();
    await page.getByText(`ran it ${m}`).waitFor();
    await page.getByText('Approved').waitFor();

    // accessibility: axe-core on the chat and the inbox (CSP bypassed only to inject axe itself)
    const axeCtx = await browser.newContext({ bypassCSP: true, viewport: { width: 375, height: 740 } });
    const axePage = await axeCtx.newPage();
    for (const screen of ['', '#inbox', '#mcp']) {
      await axePage.goto(`${stack.gatewayUrl}/${screen}`);
      if (screen === '') {
        // the login screen first, then signed in (the token is shared through localStorage)
        await expectNoSeriousViolations(axePage, 'login');
        const token = await page.evaluate(() => {
          const store = (globalThis as unknown as BrowserGlobals).localStorage;
          return [store.getItem('skald.token') ?? '', store.getItem('skald.user') ?? ''];
        });
        await axePage.evaluate(([t, u]) => {
          const store = (globalThis as unknown as BrowserGlobals).localStorage;
          store.setItem('skald.token', t);
          store.setItem('skald.user', u);
        }, token);
        await axePage.reload();
        await axePage.getByText('connected', { exact: true }).waitFor();
        await expectNoSeriousViolations(axePage, 'chat');
      } else {
        await axePage.getByRole('heading', { name: screen === '#inbox' ? 'Agent inbox' : 'MCP servers' }).waitFor();
        await expectNoSeriousViolations(axePage, screen.slice(1));
      }
    }
    await axeCtx.close();
    await ctx.close();
  });

  it('every screen, seen by an admin on a desktop: axe finds no serious violation', async () => {
    const ctx = await browser.newContext({ bypassCSP: true, viewport: { width: 1280, height: 900 } });
    const page = await ctx.newPage();
    await page.goto(stack.gatewayUrl);
    await page.getByLabel('Email').fill(stack.admin.email);
    await page.getByLabel('Password').fill(stack.admin.password);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.getByText('connected', { exact: true }).waitFor();
    // a chat with a tool card and an open approval card on it
    const m = `axe-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [{ tool_calls: [{ name: 'execute_cmd', arguments: { command: 'echo hi' } }] }, { content: 'ok' }],
    });
    await send(page, `run ${m}`);
    await page.getByRole('region', { name: /approval: Run this command/ }).waitFor();
    await expectNoSeriousViolations(page, 'chat with an approval');
    const screens: Array<[string, string]> = [
      ['#inbox', 'Agent inbox'],
      ['#cron', 'Scheduled jobs'],
      ['#tic', 'TIC'],
      ['#mcp', 'MCP servers'],
      ['#admin', 'Admin'],
    ];
    for (const [hash, heading] of screens) {
      await page.goto(`${stack.gatewayUrl}/${hash}`);
      await page.getByRole('heading', { name: heading, exact: true }).waitFor();
      await expectNoSeriousViolations(page, hash);
    }
    for (const tab of ['Tools', 'Audit', 'Users']) {
      await page.getByRole('tab', { name: tab }).click();
      await page.getByRole('table').first().waitFor();
      await expectNoSeriousViolations(page, `#admin ${tab}`);
    }
    await page.goto(`${stack.gatewayUrl}/#chat`);
    await page.getByRole('link', { name: 'session details' }).click();
    await page.getByRole('button', { name: 'Back' }).waitFor();
    await expectNoSeriousViolations(page, '#session');
    await ctx.close();
  });
});

/** What the tests touch in the page (the test project compiles without the DOM library). */
interface BrowserGlobals {
  localStorage: { getItem(key: string): string | null; setItem(key: string, value: string): void };
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
