import type { ImagePort, LlmClientDescriptor, LoadedImage, VisionLimits } from './ports';
import { LlmError } from './ports';
import { LoopHarness, type ScriptStep } from './testing';
import { IMAGE_TOKENS, estimateTokens } from './tokens';
import type { Attachment, WireMessage } from './types';

const LIMITS: VisionLimits = { maxSide: 800, maxBytes: 100_000, maxImages: 2 };
const VISION: LlmClientDescriptor = { name: 'eyes', cacheControl: false, vision: LIMITS };
const BLIND: LlmClientDescriptor = { name: 'blind', cacheControl: false };

/** An image port that "fits" an image into a data URL naming its path (the real one is the tool runner's). */
class FakeImages implements ImagePort {
  readonly loads: Array<{ userId: string; path: string; limits: VisionLimits }> = [];
  broken = new Map<string, string>();
  resultImage(call: { name: string; status: string; resultType: string | null; result: string | null }): string | null {
    return call.resultType === 'image' && call.result ? call.result.split(' ')[0] : null;
  }
  load(request: { userId: string; path: string; limits: VisionLimits }): Promise<LoadedImage> {
    this.loads.push(request);
    const reason = this.broken.get(request.path);
    if (reason) return Promise.resolve({ ok: false, reason });
    return Promise.resolve({
      ok: true,
      dataUrl: `data:image/jpeg;base64,${Buffer.from(request.path).toString('base64')}`,
      width: 10,
      height: 10,
      bytes: request.path.length,
    });
  }
}

const png = (name: string): Attachment => ({ path: `/workspace/uploads/${name}`, name, mimetype: 'image/png' });
const dataUrl = (path: string): string => `data:image/jpeg;base64,${Buffer.from(path).toString('base64')}`;

function harness(clients: LlmClientDescriptor[], script: ScriptStep[] = [{ content: 'seen' }], config = {}) {
  const h = new LoopHarness({ clients, script, config });
  const images = new FakeImages();
  h.deps = { ...h.deps, images };
  return { h, images };
}

function lastUser(messages: WireMessage[]): WireMessage {
  return [...messages].reverse().find((m) => m.role === 'user') as WireMessage;
}

describe('images for vision clients', () => {
  it('sends an image attachment to a vision client as an image_url data URL, after the attachment block', async () => {
    const { h, images } = harness([VISION]);
    await h.run({ kind: 'message', content: 'what is this?', attachments: [png('shot.png')] });
    expect(images.loads).toEqual([{ userId: 'user-1', path: '/workspace/uploads/shot.png', limits: LIMITS }]);
    expect(lastUser(h.model.calls[0].messages).content).toEqual([
      {
        type: 'text',
        text: 'what is this?\n\n[SYSTEM INFO] The user attached a file:\n- /workspace/uploads/shot.png',
      },
      { type: 'image_url', image_url: { url: dataUrl('/workspace/uploads/shot.png') } },
    ]);
  });

  it('gives a client without vision exactly the attachment block, and loads nothing', async () => {
    const { h, images } = harness([BLIND]);
    await h.run({ kind: 'message', content: 'what is this?', attachments: [png('shot.png'), png('b.gif')] });
    expect(images.loads).toEqual([]);
    expect(lastUser(h.model.calls[0].messages)).toEqual({
      role: 'user',
      content:
        'what is this?\n\n[SYSTEM INFO] The user attached files:\n- /workspace/uploads/shot.png\n- /workspace/uploads/b.gif',
    });
  });

  it('does not take a non-image attachment for an image', async () => {
    const { h, images } = harness([VISION]);
    const doc: Attachment = { path: '/workspace/uploads/notes.txt', name: 'notes.txt', mimetype: 'text/plain' };
    await h.run({ kind: 'message', content: 'read', attachments: [doc] });
    expect(images.loads).toEqual([]);
    expect(typeof lastUser(h.model.calls[0].messages).content).toBe('string');
  });

  it('sends only the newest maxImages images; older ones become a marker naming the limit', async () => {
    const { h, images } = harness([VISION], [{ content: 'one' }, { content: 'two' }]);
    await h.run({ kind: 'message', content: 'first', attachments: [png('a.png'), png('b.png')] });
    await h.run({ kind: 'message', content: 'second', attachments: [png('c.png')] });
    const sent = h.model.calls[1].messages.filter((m) => m.role === 'user');
    expect(sent[0].content).toEqual([
      { type: 'text', text: expect.stringContaining('first') as string },
      {
        type: 'text',
        text: '[Image /workspace/uploads/a.png not shown: only the newest 2 images are sent with a request. Read it again with read_file if you need to see it.]',
      },
      { type: 'image_url', image_url: { url: dataUrl('/workspace/uploads/b.png') } },
    ]);
    expect(sent[1].content).toEqual([
      { type: 'text', text: expect.stringContaining('second') as string },
      { type: 'image_url', image_url: { url: dataUrl('/workspace/uploads/c.png') } },
    ]);
    expect(images.loads.slice(2).map((l) => l.path)).toEqual(['/workspace/uploads/b.png', '/workspace/uploads/c.png']);
  });

  it('names why an image could not be shown', async () => {
    const { h, images } = harness([VISION]);
    images.broken.set('/workspace/uploads/fake.png', 'it is not an image in a format this service reads');
    await h.run({ kind: 'message', content: 'look', attachments: [png('fake.png')] });
    expect(lastUser(h.model.calls[0].messages).content).toEqual([
      { type: 'text', text: expect.stringContaining('look') as string },
      {
        type: 'text',
        text: '[Image /workspace/uploads/fake.png not shown: it is not an image in a format this service reads]',
      },
    ]);
  });

  it('shows a read_file image after the tool results; a client without vision gets the result text alone', async () => {
    for (const client of [VISION, BLIND]) {
      const h = new LoopHarness({
        clients: [client],
        tools: [
          {
            name: 'read_file',
            run: () =>
              Promise.resolve({ ok: true, content: '/workspace/pic.webp is an image (WEBP).', resultType: 'image' }),
          },
        ],
        script: [{ toolCalls: [{ name: 'read_file', arguments: { path: 'pic.webp' } }] }, { content: 'a cat' }],
      });
      h.deps = { ...h.deps, images: new FakeImages() };
      await h.run('look at pic.webp');
      const second = h.model.calls[1].messages;
      const toolAt = second.findIndex((m) => m.role === 'tool');
      expect(second[toolAt]).toMatchObject({ content: '/workspace/pic.webp is an image (WEBP).' });
      if (client === VISION) {
        expect(second[toolAt + 1]).toEqual({
          role: 'user',
          content: [
            { type: 'text', text: 'The image /workspace/pic.webp (read_file):' },
            { type: 'image_url', image_url: { url: dataUrl('/workspace/pic.webp') } },
          ],
        });
      } else {
        expect(second.slice(toolAt + 1).some((m) => m.role === 'user')).toBe(false);
      }
    }
  });

  it("hides an earlier turn's read_file image like a long tool result", async () => {
    const h = new LoopHarness({
      clients: [VISION],
      config: { maxToolResultChars: 1000 },
      tools: [
        {
          name: 'read_file',
          run: () => Promise.resolve({ ok: true, content: '/workspace/p.png is an image (PNG).', resultType: 'image' }),
        },
      ],
      script: [
        { toolCalls: [{ name: 'read_file', arguments: { path: 'p.png' } }] },
        { content: 'ok' },
        { content: 'again' },
      ],
    });
    h.deps = { ...h.deps, images: new FakeImages() };
    await h.run('look');
    await h.run('and now?');
    const third = h.model.calls[2].messages;
    expect(third.find((m) => m.role === 'tool')?.content).toBe(
      `/workspace/p.png is an image (PNG).\n[Image of \`read_file\` hidden: an image counts as ${IMAGE_TOKENS * 4} chars, exceeding the 1000-char limit for earlier turns' tool results. Call the tool again if you need to see it.]`,
    );
    expect(third.some((m) => Array.isArray(m.content) && m.content.some((p) => p.type === 'image_url'))).toBe(false);
  });

  it('counts each image as IMAGE_TOKENS and drops older images first to fit the context budget', async () => {
    const { h } = harness([VISION], [{ content: 'one' }, { content: 'two' }], {
      contextBudgetTokens: IMAGE_TOKENS + 400,
    });
    await h.run({ kind: 'message', content: 'first', attachments: [png('old.png')] });
    await h.run({ kind: 'message', content: 'second', attachments: [png('new.png')] });
    const sent = h.model.calls[1].messages.filter((m) => m.role === 'user');
    expect(sent[0].content).toEqual([
      { type: 'text', text: expect.stringContaining('first') as string },
      {
        type: 'text',
        text: `[Image /workspace/uploads/old.png not shown: it does not fit in the context budget of ${IMAGE_TOKENS + 400} tokens. Read it again with read_file if you need to see it.]`,
      },
    ]);
    expect(sent[1].content).toContainEqual({
      type: 'image_url',
      image_url: { url: dataUrl('/workspace/uploads/new.png') },
    });
    expect(estimateTokens([{ role: 'user', content: [{ type: 'image_ref', path: '/workspace/x.png' }] }])).toBe(
      IMAGE_TOKENS,
    );
  });

  it('fits images anew for each client of a fallback: a client without vision after one with it gets none', async () => {
    const { h, images } = harness([VISION, BLIND], [{ error: new LlmError('503', true) }, { content: 'ok' }], {
      llmRetry: { triesPerClient: 1, maxWaitMs: 0, baseDelayMs: 0 },
    });
    await h.run({ kind: 'message', content: 'see', attachments: [png('x.jpg')] });
    expect(h.model.calls.map((c) => c.client)).toEqual(['eyes', 'blind']);
    expect(JSON.stringify(h.model.calls[0].messages)).toContain('image_url');
    expect(JSON.stringify(h.model.calls[1].messages)).not.toContain('image');
    expect(images.loads).toHaveLength(1);
  });
});
