import {
  existsSync,
  lstatSync,
  mkdirSync,
  readdirSync,
  readFileSync,
  realpathSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import path from 'node:path';
import { randomUUID } from 'node:crypto';
import fc from 'fast-check';
import type { Browser, Page } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack } from '@skald/testing';
import { DESKTOP, PHONE, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';

jest.setTimeout(240_000);

// A failing property prints its seed; FC_SEED=<seed> replays it.
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const PASSWORD = 'correct horse battery';
/** Small enough to pass in a test, large enough that an upload spans several NATS chunks (512 KiB). */
const UPLOAD_MAX = 1536 * 1024;

/** Files: uploads into the workspace, serving workspace files, attachments the model sees, the viewer. */
describe('files: uploads, GET /files and the viewer', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({
      perApp: { gateway: { SKALD_UPLOAD_MAX_BYTES: String(UPLOAD_MAX) } },
    }));
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  const user = () => admin.createUser(`f-${randomUUID()}@skald.test`, PASSWORD);
  const home = (api: ApiClient) => path.join(stack.env.SKALD_WORKSPACES, api.user!.id);
  const uploadsOf = (api: ApiClient) => {
    const dir = path.join(home(api), 'uploads');
    return existsSync(dir) ? readdirSync(dir).sort() : [];
  };

  const upload = async (api: ApiClient, name: string, bytes: Buffer | string, type = 'application/octet-stream') => {
    const form = new FormData();
    form.append('file', new Blob([bytes], { type }), name);
    const res = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}` },
      body: form,
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const raw = async (api: ApiClient, body: string | Buffer, contentType?: string) => {
    const res = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}`, ...(contentType ? { 'content-type': contentType } : {}) },
      body,
    });
    return { status: res.status, body: await res.text() };
  };
  const getFile = (api: ApiClient | null, p: string) =>
    fetch(`${stack.gatewayUrl}/api/files?path=${encodeURIComponent(p)}`, {
      headers: api ? { authorization: `Bearer ${api.token}` } : {},
    });

  describe('POST /{source}/uploads', () => {
    it('stores a file under uploads/ with its metadata; a file of several NATS chunks arrives whole', async () => {
      const alice = await user();
      const r = await upload(alice, 'notes.txt', 'hello workspace\n', 'text/plain');
      expect(r).toEqual({
        status: 201,
        body: { path: '/workspace/uploads/notes.txt', name: 'notes.txt', mimetype: 'text/plain', filesize: 16 },
      });
      expect(readFileSync(path.join(home(alice), 'uploads/notes.txt'), 'utf8')).toBe('hello workspace\n');
      const big = Buffer.alloc(1300 * 1024);
      for (let i = 0; i < big.length; i++) big[i] = (i * 7919) % 251;
      const b = await upload(alice, 'data.bin', big);
      expect(b.status).toBe(201);
      expect(b.body.filesize).toBe(big.length);
      expect(readFileSync(path.join(home(alice), 'uploads/data.bin')).equals(big)).toBe(true);
      const again = await upload(alice, 'notes.txt', 'second');
      expect(again.body.path).toBe('/workspace/uploads/notes (1).txt');
      expect(readFileSync(path.join(home(alice), 'uploads/notes.txt'), 'utf8')).toBe('hello workspace\n');
    });

    it('generated hostile names always land as one sanitised file inside uploads/, never a 5xx', async () => {
      const bob = await user();
      const name = fc.oneof(
        fc.string({ unit: 'binary', minLength: 1, maxLength: 300 }),
        fc
          .array(fc.constantFrom('..', '/', '\\', '.', 'CON', 'nul.txt', '😀', 'é', ' ', '-', '%00', '\u202e', 'a'), {
            minLength: 1,
            maxLength: 30,
          })
          .map((p) => p.join('')),
        fc.constant('x'.repeat(5000)),
      );
      expect((await upload(bob, 'first.txt', 'x')).status).toBe(201);
      const uploads = path.join(realpathSync(home(bob)), 'uploads');
      await fc.assert(
        fc.asyncProperty(name, async (n) => {
          const r = await upload(bob, n, 'x');
          expect(r.status).toBeLessThan(500);
          if (r.status !== 201) return;
          const stored = String(r.body.path);
          expect(stored).toMatch(/^\/workspace\/uploads\/[^/]+$/);
          const host = path.join(uploads, stored.slice('/workspace/uploads/'.length));
          expect(path.dirname(realpathSync(host))).toBe(uploads);
          expect(lstatSync(host).isFile()).toBe(true);
        }),
        { seed, numRuns: 150 },
      );
      expect(readdirSync(home(bob))).toEqual(['uploads']);
    });

    it('a file past the upload limit is 413 and nothing is stored', async () => {
      const carol = await user();
      const r = await upload(carol, 'big.bin', Buffer.alloc(UPLOAD_MAX + 1));
      expect(r.status).toBe(413);
      expect(r.body).toMatchObject({ error: { code: 'too_large' } });
      // without a Content-Length the limit still holds (chunked request body)
      const form = new FormData();
      form.append('file', new Blob([Buffer.alloc(UPLOAD_MAX + 10)]), 'chunked.bin');
      const body = new Response(form);
      const res = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
        method: 'POST',
        headers: { authorization: `Bearer ${carol.token}`, 'content-type': body.headers.get('content-type')! },
        body: body.body,
        duplex: 'half',
      });
      expect(res.status).toBe(413);
      expect(uploadsOf(carol)).toEqual([]);
    });

    it('malformed and hostile multipart bodies are 4xx, never 5xx, and store nothing', async () => {
      const dave = await user();
      const b = '----skald';
      const part = (field: string, filename: string | null, body: string) =>
        `--${b}\r\nContent-Disposition: form-data; name="${field}"${filename === null ? '' : `; filename="${filename}"`}\r\n\r\n${body}\r\n`;
      const cases: Array<[string, string | Buffer, string | undefined]> = [
        ['no content type', 'hello', undefined],
        ['JSON', '{"file":"x"}', 'application/json'],
        ['multipart without boundary', part('file', 'a.txt', 'x'), 'multipart/form-data'],
        ['wrong boundary', part('file', 'a.txt', 'x') + `--${b}--\r\n`, 'multipart/form-data; boundary=other'],
        [
          'truncated body',
          `--${b}\r\nContent-Disposition: form-data; name="file"; filename="a.txt"\r\n\r\nabc`,
          `multipart/form-data; boundary=${b}`,
        ],
        ['empty body', '', `multipart/form-data; boundary=${b}`],
        ['only a text field', part('note', null, 'x') + `--${b}--\r\n`, `multipart/form-data; boundary=${b}`],
        ['the wrong file field', part('upload', 'a.txt', 'x') + `--${b}--\r\n`, `multipart/form-data; boundary=${b}`],
        [
          'two files',
          part('file', 'a.txt', 'x') + part('file', 'b.txt', 'y') + `--${b}--\r\n`,
          `multipart/form-data; boundary=${b}`,
        ],
        [
          'a field before the file',
          part('x', null, 'y') + part('file', 'a.txt', 'x') + `--${b}--\r\n`,
          `multipart/form-data; boundary=${b}`,
        ],
        [
          'header flood',
          `--${b}\r\n${'X-A: b\r\n'.repeat(5000)}\r\nx\r\n--${b}--\r\n`,
          `multipart/form-data; boundary=${b}`,
        ],
      ];
      for (const [what, body, type] of cases) {
        const r = await raw(dave, body, type);
        expect([what, r.status >= 400 && r.status < 500]).toEqual([what, true]);
      }
      // generated bodies under a multipart content type
      await fc.assert(
        fc.asyncProperty(
          fc.array(
            fc.oneof(
              fc.constantFrom(
                `--${b}`,
                '\r\n',
                `--${b}--`,
                'Content-Disposition: form-data; name="file"; filename="a"',
                'Content-Type: text/plain',
                'x',
              ),
              fc.string({ maxLength: 40 }),
            ),
            { maxLength: 12 },
          ),
          async (parts) => {
            const r = await raw(dave, parts.join(''), `multipart/form-data; boundary=${b}`);
            expect(r.status).toBeLessThan(500);
          },
        ),
        { seed, numRuns: 150 },
      );
      expect(uploadsOf(dave).every((n) => !n.includes('/'))).toBe(true);
    });

    it('asks for a login', async () => {
      const form = new FormData();
      form.append('file', new Blob(['x']), 'a.txt');
      const res = await fetch(`${stack.gatewayUrl}/api/web/uploads`, { method: 'POST', body: form });
      expect(res.status).toBe(401);
    });
  });

  describe('GET /files', () => {
    it('serves the owner’s file with its type, never executable in the page', async () => {
      const erin = await user();
      mkdirSync(path.join(home(erin), 'site'), { recursive: true });
      writeFileSync(path.join(home(erin), 'site/index.html'), '<script>alert(1)</script>');
      writeFileSync(
        path.join(home(erin), 'site/logo.svg'),
        '<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>',
      );
      writeFileSync(path.join(home(erin), 'site/notes.txt'), 'plain');
      writeFileSync(path.join(home(erin), 'site/pic.png'), Buffer.from([0x89, 0x50, 0x4e, 0x47]));
      const expectations: Array<[string, string, 'inline' | 'attachment']> = [
        ['site/index.html', 'text/html; charset=utf-8', 'attachment'],
        ['/workspace/site/logo.svg', 'image/svg+xml', 'attachment'],
        ['site/notes.txt', 'text/plain; charset=utf-8', 'inline'],
        ['site/pic.png', 'image/png', 'inline'],
      ];
      for (const [p, type, disposition] of expectations) {
        const res = await getFile(erin, p);
        expect([p, res.status]).toEqual([p, 200]);
        expect(res.headers.get('content-type')).toBe(type);
        expect(res.headers.get('content-disposition')).toMatch(new RegExp(`^${disposition}; filename="`));
        expect(res.headers.get('x-content-type-options')).toBe('nosniff');
        expect(res.headers.get('content-security-policy')).toMatch(/^sandbox; default-src 'none'/);
      }
      expect(await (await getFile(erin, 'site/notes.txt')).text()).toBe('plain');
      // a file of several chunks comes back whole
      const big = Buffer.alloc(1200 * 1024, 3);
      writeFileSync(path.join(home(erin), 'big.bin'), big);
      const res = await getFile(erin, 'big.bin');
      expect(Buffer.from(await res.arrayBuffer()).equals(big)).toBe(true);
    });

    it('never serves anything outside the caller’s workspace: traversal, symlinks out, another user’s files', async () => {
      const frank = await user();
      const grace = await user();
      mkdirSync(home(frank), { recursive: true });
      writeFileSync(path.join(home(frank), 'mine.txt'), 'frank');
      mkdirSync(home(grace), { recursive: true });
      writeFileSync(path.join(home(grace), 'secret.txt'), 'GRACE-SECRET');
      symlinkSync(path.join(home(grace), 'secret.txt'), path.join(home(frank), 'link.txt'));
      symlinkSync('/etc', path.join(home(frank), 'etc'));
      const gid = grace.user!.id;
      const hostile = [
        `/workspace/../${gid}/secret.txt`,
        `../${gid}/secret.txt`,
        `${home(grace)}/secret.txt`,
        `/workspace/%2e%2e/${gid}/secret.txt`,
        `..%2f${gid}%2fsecret.txt`,
        'link.txt',
        'etc/passwd',
        '/etc/passwd',
        'mine.txt\0.png',
        'user-memory/notes.md',
        '/workspace',
        'nope.txt',
      ];
      for (const p of hostile) {
        const res = await getFile(frank, p);
        const text = await res.text();
        expect([p, res.status]).toEqual([p, expect.any(Number)]);
        expect([p, res.status >= 400 && res.status < 500]).toEqual([p, true]);
        expect(text).not.toContain('GRACE-SECRET');
        expect(text).not.toContain('root:');
      }
      // grace reads her own; frank's same-looking path is his own workspace
      expect(await (await getFile(grace, 'secret.txt')).text()).toBe('GRACE-SECRET');
      expect((await getFile(frank, 'secret.txt')).status).toBe(404);
      expect((await getFile(null, 'mine.txt')).status).toBe(401);
      expect((await getFile(frank, '')).status).toBe(400);
    });
  });

  it('the model sees an attachment through the attachment block; the echo carries it', async () => {
    const hank = await user();
    const up = await upload(hank, 'report.csv', 'a,b\n1,2\n', 'text/csv');
    const m = `att-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `read it ${m}` }] });
    const r = await hank.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `summarise ${m}`,
      attachments: [up.body],
    });
    expect(r.status).toBe(202);
    for (let i = 0; i < 100 && (await sim.requests({ contains: m })).length === 0; i++)
      await new Promise((x) => setTimeout(x, 100));
    const [req] = await sim.requests({ contains: m });
    const body = req.body as { messages: Array<{ role: string; content: unknown }> };
    const userMsg = body.messages.filter((x) => x.role === 'user').at(-1);
    expect(String(userMsg?.content)).toBe(
      `summarise ${m}\n\n[SYSTEM INFO] The user attached a file:\n- /workspace/uploads/report.csv (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)`,
    );
    const history = await hank.get<{ items: Array<{ role: string; attachments?: unknown[] }> }>('/api/web/messages');
    expect(history.body.items.find((x) => x.role === 'user')?.attachments).toEqual([up.body]);
  });

  describe('PUT /sessions/{id}/run-context', () => {
    const activeSession = async (api: ApiClient) =>
      (await api.post<{ session_id: string }>('/api/sessions?source=web')).body.session_id;

    it('sets the working directory and pre-authorised paths, normalised; the owner only; hostile paths are 400', async () => {
      const ivy = await user();
      const jack = await user();
      const sid = await activeSession(ivy);
      const put = (api: ApiClient, body: unknown, id = sid) =>
        api.request('PUT', `/api/sessions/${id}/run-context`, body);
      const r = await put(ivy, {
        working_directory: 'proj/../app',
        allow_fs_writes: ['out/'],
        allow_fs_reads: ['/workspace/docs'],
      });
      expect(r).toMatchObject({
        status: 200,
        body: {
          working_directory: '/workspace/app',
          allow_fs_writes: ['/workspace/out'],
          allow_fs_reads: ['/workspace/docs'],
          security_group: null,
        },
      });
      expect((await ivy.get(`/api/sessions/${sid}/run-context`)).body).toEqual(r.body);
      // another user's session is not found, and stays as it was
      expect((await put(jack, { working_directory: '/workspace' })).status).toBe(404);
      expect((await jack.get(`/api/sessions/${sid}/run-context`)).status).toBe(404);
      expect((await put(ivy, {}, randomUUID())).status).toBe(404);
      expect((await put(ivy, {}, 'not-a-uuid')).status).toBe(404);
      // choosing a security group is an admin's decision
      expect((await put(ivy, { security_group: 'ops' })).status).toBe(403);
      const hostile = [
        { working_directory: '/etc' },
        { working_directory: `../${jack.user!.id}` },
        { allow_fs_writes: ['/workspace/../../'] },
        { allow_fs_reads: ['/'] },
        { allow_fs_writes: ['a\u0000b'] },
        { allow_fs_reads: ['user-memory/x'] },
        { allow_fs_writes: ['proj/*'] },
        { allow_fs_reads: ['/workspace/docs/**'] },
        { allow_fs_writes: 'out' },
        { allow_fs_writes: Array.from({ length: 101 }, (_, i) => `d${i}`) },
        { working_directory: 'x'.repeat(5000) },
        { surprise: true },
      ];
      for (const body of hostile) {
        const res = await put(ivy, body);
        expect([body, res.status]).toEqual([body, 400]);
      }
      expect((await ivy.get(`/api/sessions/${sid}/run-context`)).body).toEqual(r.body);
    });

    it('a write inside a pre-authorised path runs without an approval, relative to the working directory', async () => {
      const kim = await user();
      const sid = await activeSession(kim);
      await kim.request('PUT', `/api/sessions/${sid}/run-context`, {
        working_directory: 'app',
        allow_fs_writes: ['app/out'],
      });
      const m = `rc-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          { tool_calls: [{ name: 'write_file', arguments: { path: 'out/r.txt', content: 'pre-authorised' } }] },
          { content: `wrote ${m}` },
        ],
      });
      await kim.post('/api/web/messages', { client_message_id: randomUUID(), content: `write ${m}` });
      const file = path.join(home(kim), 'app/out/r.txt');
      const content = () => (existsSync(file) ? readFileSync(file, 'utf8') : null);
      for (let i = 0; i < 150 && content() !== 'pre-authorised'; i++) await new Promise((x) => setTimeout(x, 100));
      expect(content()).toBe('pre-authorised');
      expect((await kim.get<{ approvals: unknown[] }>('/api/inbox')).body.approvals).toEqual([]);
    });
  });

  describe('in the browser', () => {
    for (const [label, viewport] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
    ] as const) {
      it(`attach by button, drop and paste; chips on the message; the viewer highlights (${label})`, async () => {
        const api = await user();
        const ctx = await browser.newContext({ viewport });
        const page = await ctx.newPage();
        await signIn(page, stack.gatewayUrl, api.user!.email, PASSWORD);
        const suffix = label === 'phone' ? '-phone' : '';
        // button: the file picker
        await page.getByLabel('Files to attach').setInputFiles({
          name: 'app.ts',
          mimeType: 'text/plain',
          buffer: Buffer.from('export function add(a: number, b: number): number {\n  return a + b; // sum\n}\n'),
        });
        // drag and drop onto the chat
        await dropFile(page, 'dropped.md', '# Dropped\n');
        // paste into the composer
        await pasteFile(page, 'pasted.txt', 'pasted text');
        const chips = page.getByRole('list', { name: 'attachments' });
        for (const n of ['app.ts', 'dropped.md', 'pasted.txt']) await chips.getByText(n).waitFor();
        await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).waitFor();
        await shot(page, `files-composer${suffix}`);
        expect(await seriousViolations(page)).toEqual([]);
        expect(uploadsOf(api)).toEqual(['app.ts', 'dropped.md', 'pasted.txt']);

        const m = `chips-${randomUUID()}`;
        await sim.script({ match: m, replies: [{ content: `Got your files ${m}` }] });
        await page.getByLabel('Message').fill(`look ${m}`);
        await page.getByRole('button', { name: 'Send' }).click();
        const sent = page.getByRole('list', { name: 'attached files' });
        await sent.getByRole('button', { name: /app\.ts/ }).waitFor();
        await page.getByText(`Got your files ${m}`).waitFor();
        expect(await chips.count()).toBe(0);
        await shot(page, `files-message${suffix}`);

        await sent.getByRole('button', { name: /app\.ts/ }).click();
        const viewer = page.getByRole('dialog', { name: 'File /workspace/uploads/app.ts' });
        await viewer.locator('.hljs-keyword').first().waitFor();
        expect(await viewer.getByLabel('file content').innerText()).toContain('return a + b;');
        await shot(page, `file-viewer${suffix}`);
        expect(await seriousViolations(page)).toEqual([]);
        await page.keyboard.press('Escape');
        await viewer.waitFor({ state: 'detached' });
        await ctx.close();
      });
    }

    it('the run context dialog edits the session’s working directory and paths (desktop and phone)', async () => {
      const api = await user();
      for (const [suffix, viewport] of [
        ['', DESKTOP],
        ['-phone', PHONE],
      ] as const) {
        const ctx = await browser.newContext({ viewport });
        const page = await ctx.newPage();
        await signIn(page, stack.gatewayUrl, api.user!.email, PASSWORD);
        await page.getByRole('button', { name: 'run context' }).click();
        const dialog = page.getByRole('dialog', { name: 'Run context' });
        await dialog.getByLabel('Working directory').fill('/etc');
        await dialog.getByRole('button', { name: 'Save run context' }).click();
        await dialog.getByRole('alert').waitFor();
        await dialog.getByLabel('Working directory').fill('src/../app');
        await dialog.getByLabel('Pre-authorised writes (one path a line)').fill('app/out\nbuild');
        await dialog.getByRole('button', { name: 'Save run context' }).click();
        await dialog.getByText('Saved.').waitFor();
        expect(await dialog.getByLabel('Working directory').inputValue()).toBe('/workspace/app');
        expect(await dialog.getByLabel('Pre-authorised writes (one path a line)').inputValue()).toBe(
          '/workspace/app/out\n/workspace/build',
        );
        await shot(page, `run-context${suffix}`);
        expect(await seriousViolations(page)).toEqual([]);
        await ctx.close();
      }
    });

    it('a file the agent writes shows as a chip that opens the viewer', async () => {
      const api = await user();
      const ctx = await browser.newContext({ viewport: DESKTOP });
      const page = await ctx.newPage();
      await signIn(page, stack.gatewayUrl, api.user!.email, PASSWORD);
      const m = `fc-${randomUUID()}`;
      await sim.script({
        match: m,
        replies: [
          {
            tool_calls: [
              { name: 'write_file', arguments: { path: 'hello.py', content: 'def hello():\n    return "hi"\n' } },
            ],
          },
          { content: `done ${m}` },
        ],
      });
      await page.getByLabel('Message').fill(`write ${m}`);
      await page.getByRole('button', { name: 'Send' }).click();
      await page.getByRole('button', { name: 'Approve', exact: true }).click();
      await page.getByText(`done ${m}`).waitFor();
      await page.getByRole('button', { name: '/workspace/hello.py' }).click();
      const viewer = page.getByRole('dialog', { name: 'File /workspace/hello.py' });
      await viewer.locator('.hljs-keyword').first().waitFor();
      await shot(page, 'file-viewer-changed');
      await ctx.close();
    });
  });
});

/** Drops a file on the chat as a browser does (a DataTransfer on dragenter, dragover, drop). */
async function dropFile(page: Page, name: string, text: string): Promise<void> {
  const dt = await page.evaluateHandle(
    ([n, t]) => {
      const g = globalThis as unknown as {
        DataTransfer: new () => DataTransferLike;
        File: new (b: string[], n: string) => unknown;
      };
      const d = new g.DataTransfer();
      d.items.add(new g.File([t], n));
      return d;
    },
    [name, text],
  );
  for (const type of ['dragenter', 'dragover', 'drop'])
    await page.dispatchEvent('main.chat', type, { dataTransfer: dt });
}

/** Pastes a file into the composer (a ClipboardEvent carrying it). */
async function pasteFile(page: Page, name: string, text: string): Promise<void> {
  await page.getByLabel('Message').evaluate(
    (el, [n, t]) => {
      const g = globalThis as unknown as {
        DataTransfer: new () => DataTransferLike;
        File: new (b: string[], n: string) => unknown;
        ClipboardEvent: new (type: string, init: unknown) => unknown;
      };
      const d = new g.DataTransfer();
      d.items.add(new g.File([t], n));
      (el as unknown as { dispatchEvent(e: unknown): void }).dispatchEvent(
        new g.ClipboardEvent('paste', { clipboardData: d, bubbles: true, cancelable: true }),
      );
    },
    [name, text],
  );
}

interface DataTransferLike {
  items: { add(f: unknown): void };
}
