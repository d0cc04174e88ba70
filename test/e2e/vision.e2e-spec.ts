import { randomUUID } from 'node:crypto';
import sharp from 'sharp';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, WsTestClient } from '@skald/testing';
import { DESKTOP, PHONE, seriousViolations, shot, signIn } from '../support/browser';
import { startWebStack, stopWebStack } from '../support/web-stack';
import { bombPng } from '../../apps/tool-runner/src/testing-fixtures/bomb-png';

jest.setTimeout(240_000);

const PASSWORD = 'correct horse battery';
/** The vision client's limits: small, so that every image is resized and the bytes limit bites. */
const VISION = { maxSide: 256, maxBytes: 20_000, maxImages: 2 };

type Part = { type: string; text?: string; image_url?: { url: string } };
type Message = { role: string; content: string | Part[] | null };

/**
 * Images to vision models, end to end: an upload or a `read_file` of an image reaches the vision
 * client as a data URL that decodes (with sharp, here) to the resized image, without EXIF; a client
 * without vision gets the attachment block alone; the web client shows thumbnails and whether the
 * model can see images.
 */
describe('images to vision models', () => {
  let stack: Stack;
  let sim: LlmSimAdminClient;
  let admin: ApiClient;
  let db: DataSource;
  let browser: Browser;

  beforeAll(async () => {
    ({ stack, sim, admin, db, browser } = await startWebStack({
      llmClients: (simUrl) => [
        { name: 'eyes', baseUrl: simUrl, model: 'sim-vision', priority: 10, vision: VISION },
        { name: 'blind', baseUrl: simUrl, model: 'sim-text', priority: 20 },
      ],
    }));
  });
  afterAll(() => stopWebStack({ stack, db, browser }));

  const user = () => admin.createUser(`v-${randomUUID()}@skald.test`, PASSWORD);

  const upload = async (api: ApiClient, name: string, bytes: Buffer, type: string) => {
    const form = new FormData();
    form.append('file', new Blob([bytes], { type }), name);
    const res = await fetch(`${stack.gatewayUrl}/api/web/uploads`, {
      method: 'POST',
      headers: { authorization: `Bearer ${api.token}` },
      body: form,
    });
    expect(res.status).toBe(201);
    return (await res.json()) as { path: string; name: string; mimetype?: string; filesize: number };
  };

  /** The requests whose text contains `marker`, once there are `count`. */
  const requestsWith = async (marker: string, count = 1) => {
    for (let i = 0; i < 300; i++) {
      const found = await sim.requests({ contains: marker });
      if (found.length >= count) return found.map((r) => r.body as { model: string; messages: Message[] });
      await new Promise((x) => setTimeout(x, 100));
    }
    throw new Error(`no ${count} request(s) with ${marker}`);
  };

  const imagesOf = (m: Message | undefined): string[] =>
    Array.isArray(m?.content) ? m.content.filter((p) => p.type === 'image_url').map((p) => p.image_url!.url) : [];
  const textsOf = (m: Message | undefined): string[] =>
    Array.isArray(m?.content) ? m.content.filter((p) => p.type === 'text').map((p) => p.text!) : [];

  /** What the model received: the data URL's bytes, decoded. */
  const decode = async (url: string) => {
    const match = /^data:image\/jpeg;base64,(.+)$/.exec(url);
    expect(match).not.toBeNull();
    const bytes = Buffer.from(match![1], 'base64');
    return { bytes, meta: await sharp(bytes).metadata() };
  };

  const photo = (width: number, height: number) =>
    sharp({ create: { width, height, channels: 3, background: '#2a7ab0' } })
      .jpeg()
      .withMetadata({ orientation: 6 })
      .withExifMerge({
        IFD0: { Artist: 'exif-artist-marker' },
        IFD3: { GPSLatitudeRef: 'N', GPSLatitude: '59/1 20/1 0/1' },
      })
      .toBuffer();

  it('an attached photo reaches the vision client resized, upright and without EXIF', async () => {
    const alice = await user();
    const jpeg = await photo(1200, 600);
    expect((await sharp(jpeg).metadata()).exif?.toString('latin1')).toContain('exif-artist-marker');
    const att = await upload(alice, 'photo.jpg', jpeg, 'image/jpeg');
    const m = `vis-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `I see a blue photo ${m}` }] });
    await alice.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `what is this? ${m}`,
      attachments: [att],
    });
    const [req] = await requestsWith(m);
    expect(req.model).toBe('sim-vision');
    const userMsg = req.messages.filter((x) => x.role === 'user').at(-1);
    expect(textsOf(userMsg)).toEqual([`what is this? ${m}\n\n[SYSTEM INFO] The user attached a file:\n- ${att.path}`]);
    const [url] = imagesOf(userMsg);
    const { bytes, meta } = await decode(url);
    // 1200×600 turned upright by orientation 6 is 600×1200, fitted to 256 on its longest side
    expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 128, 256]);
    expect(bytes.length).toBeLessThanOrEqual(VISION.maxBytes);
    expect(meta.exif).toBeUndefined();
    expect(bytes.toString('latin1')).not.toContain('exif-artist-marker');
  });

  it('read_file of a workspace image shows the model the image; more images than the limit drop the oldest with a marker', async () => {
    const bob = await user();
    const big = await sharp({ create: { width: 2000, height: 1000, channels: 3, background: '#aa3300' } })
      .png()
      .toBuffer();
    const a = await upload(bob, 'a.png', big, 'image/png');
    const b = await upload(bob, 'b.webp', await sharp(big).webp().toBuffer(), 'image/webp');
    const m = `rf-${randomUUID()}`;
    await sim.script({
      match: m,
      replies: [
        { tool_calls: [{ name: 'read_file', arguments: { path: 'uploads/chart.gif' } }] },
        { content: `done ${m}` },
      ],
    });
    const gif = await sharp(
      [
        await sharp({ create: { width: 600, height: 300, channels: 3, background: '#00ff00' } })
          .png()
          .toBuffer(),
        await sharp({ create: { width: 600, height: 300, channels: 3, background: '#ff00ff' } })
          .png()
          .toBuffer(),
      ],
      { join: { animated: true } },
    )
      .gif()
      .toBuffer();
    await upload(bob, 'chart.gif', gif, 'image/gif');
    await bob.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `compare ${m}`,
      attachments: [a, b],
    });
    const reqs = await requestsWith(m, 2);
    const second = reqs[1].messages;
    const tool = second.find((x) => x.role === 'tool');
    expect(tool?.content).toMatch(/^\/workspace\/uploads\/chart\.gif is an image \(GIF, 600×300 px, /);
    // three images, a limit of two: the oldest attachment became a marker
    const users = second.filter((x) => x.role === 'user');
    expect(textsOf(users[0])).toContain(
      `[Image ${a.path} not shown: only the newest 2 images are sent with a request. Read it again with read_file if you need to see it.]`,
    );
    expect(imagesOf(users[0])).toHaveLength(1);
    const shown = users.at(-1);
    expect(textsOf(shown)).toEqual(['The image /workspace/uploads/chart.gif (read_file):']);
    const { meta: gifMeta, bytes } = await decode(imagesOf(shown)[0]);
    expect([gifMeta.width, gifMeta.height, gifMeta.pages ?? 1]).toEqual([256, 128, 1]);
    const { data } = await sharp(bytes).raw().toBuffer({ resolveWithObject: true });
    expect([data[0] < 80, data[1] > 180]).toEqual([true, true]); // the first frame: green
    const webp = await decode(imagesOf(users[0])[0]);
    expect([webp.meta.width, webp.meta.height]).toEqual([256, 128]);
  });

  it('a bomb, a corrupt image and a text file named .png each become a marker naming why; the turn goes on', async () => {
    const carol = await user();
    const bomb = await upload(carol, 'bomb.png', bombPng(60_000, 60_000), 'image/png');
    const fake = await upload(carol, 'fake.png', Buffer.from('just some text, not a picture'), 'image/png');
    const whole = await sharp({ create: { width: 300, height: 300, channels: 3, background: '#123456' } })
      .png()
      .toBuffer();
    const cut = await upload(carol, 'cut.png', whole.subarray(0, 60), 'image/png');
    const m = `bad-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `ok ${m}` }] });
    await carol.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `look ${m}`,
      attachments: [bomb, fake],
    });
    const [first] = await requestsWith(m);
    const texts = textsOf(first.messages.filter((x) => x.role === 'user').at(-1));
    expect(texts).toContain(
      `[Image ${bomb.path} not shown: it is 60000×60000 pixels, more than the 50,000,000 decoded pixels an image may have]`,
    );
    expect(texts).toContain(
      `[Image ${fake.path} not shown: it is not an image in a format this service reads (PNG, JPEG, WebP or GIF)]`,
    );
    const m2 = `cut-${randomUUID()}`;
    await sim.script({ match: m2, replies: [{ content: `ok ${m2}` }] });
    await carol.post('/api/web/messages', {
      client_message_id: randomUUID(),
      content: `and ${m2}`,
      attachments: [cut],
    });
    const [again] = await requestsWith(m2);
    expect(textsOf(again.messages.filter((x) => x.role === 'user').at(-1)).join('\n')).toMatch(
      /\[Image \/workspace\/uploads\/cut\.png not shown: it (is corrupt or truncated|is not an image)/,
    );
  });

  it('a client without vision gets the attachment block as before; GET /api/llm/clients says which can see', async () => {
    const dave = await user();
    const clients = await dave.get<{ items: Array<{ name: string; vision: boolean }> }>('/api/llm/clients?source=web');
    expect(clients.body.items.map((c) => [c.name, c.vision])).toEqual([
      ['eyes', true],
      ['blind', false],
    ]);
    const att = await upload(
      dave,
      'shot.png',
      await sharp({ create: { width: 50, height: 50, channels: 3, background: '#000' } })
        .png()
        .toBuffer(),
      'image/png',
    );
    const ws = await WsTestClient.connect(stack.gatewayUrl, { token: dave.token, source: 'web' });
    await ws.waitForType('turn_running');
    ws.send({ type: 'select_client', client: 'blind' });
    await ws.waitForType('client_selected');
    const m = `blind-${randomUUID()}`;
    await sim.script({ match: m, replies: [{ content: `no eyes ${m}` }] });
    ws.send({ type: 'message', client_message_id: randomUUID(), content: `see ${m}`, attachments: [att] });
    const [req] = await requestsWith(m);
    expect(req.model).toBe('sim-text');
    expect(req.messages.filter((x) => x.role === 'user').at(-1)?.content).toBe(
      `see ${m}\n\n[SYSTEM INFO] The user attached a file:\n- ${att.path}`,
    );
    ws.close();
  });

  describe('in the browser', () => {
    for (const [label, viewport] of [
      ['desktop', DESKTOP],
      ['phone', PHONE],
      ['narrow', { width: 320, height: 700 }],
    ] as const) {
      it(`a message shows image thumbnails; the model picker says whether the model sees images (${label})`, async () => {
        const api = await user();
        const ctx = await browser.newContext({ viewport });
        const page = await ctx.newPage();
        await signIn(page, stack.gatewayUrl, api.user!.email, PASSWORD);
        await page.getByText('May not see images').waitFor();
        const png = await sharp({ create: { width: 640, height: 360, channels: 3, background: '#3b82f6' } })
          .png()
          .toBuffer();
        await page
          .getByLabel('Files to attach')
          .setInputFiles({ name: 'screen.png', mimeType: 'image/png', buffer: png });
        await page.getByRole('list', { name: 'attachments' }).getByText('screen.png').waitFor();
        const m = `thumb-${randomUUID()}`;
        await sim.script({ match: m, replies: [{ content: `A blue screen ${m}` }] });
        await page.getByLabel('Message').fill(`what is on it ${m}`);
        await page.getByRole('button', { name: 'Send' }).and(page.locator(':enabled')).click();
        const thumb = page.getByRole('list', { name: 'attached files' }).getByRole('img', { name: 'screen.png' });
        await thumb.waitFor();
        // the thumbnail is the image itself, loaded with the user's token
        const width = () => thumb.evaluate((el) => (el as unknown as { naturalWidth: number }).naturalWidth);
        for (let i = 0; i < 50 && (await width()) !== 640; i++) await new Promise((x) => setTimeout(x, 100));
        expect(await width()).toBe(640);
        await page.getByText(`A blue screen ${m}`).waitFor();
        await page.getByLabel('Model').selectOption('blind');
        await page.getByText('Cannot see images').waitFor();
        // an image in the draft for a model that cannot see it: the notice says so in words
        await page
          .getByLabel('Files to attach')
          .setInputFiles({ name: 'next.png', mimeType: 'image/png', buffer: png });
        await page.getByText('The model cannot see images: it is told only the paths of attached images.').waitFor();
        await shot(page, `vision-thumbnails-${label}`);
        expect(await seriousViolations(page)).toEqual([]);
        await page.getByLabel('Model').selectOption('eyes');
        await page.getByText('Sees images').waitFor();
        expect(await seriousViolations(page)).toEqual([]);
        await ctx.close();
      });
    }
  });
});
