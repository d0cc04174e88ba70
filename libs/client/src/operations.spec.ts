import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { OPERATION_IDS, type OperationId } from '@skald/contracts';
import { ROUTE_TABLE } from '@skald/contracts/route-table';
import { SkaldClient } from './client.ts';
import type { CallResult } from './operations.ts';
import type { FetchLike } from './rest.ts';

type Call = { url: string; init: RequestInit };
function client(answer: (url: string, init: RequestInit) => Response = () => json(200, {})) {
  const calls: Call[] = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    return answer(url, init);
  };
  return { client: new SkaldClient({ baseUrl: 'http://gw', token: 't', fetch }), calls };
}
const json = (status: number, body: unknown) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json' } });

// Compile-time completeness: the table the SDK calls through has every operation of ROUTES and no other.
type Missing = Exclude<OperationId, keyof typeof ROUTE_TABLE>;
type Extra = Exclude<keyof typeof ROUTE_TABLE, OperationId>;
const complete: [Missing, Extra] extends [never, never] ? true : never = true;

// Compile-time: parts and answers follow from the route entry.
async function typed(c: SkaldClient): Promise<void> {
  const s: CallResult<'getSession'> = await c.call('getSession', { params: { id: 'x' } });
  void s.session.id;
  const renamed = await c.call('renameSession', { params: { id: 'x' }, body: { title: 'T' } });
  void renamed.title;
  const none: undefined | void = await c.call('deleteSession', { params: { id: 'x' } });
  void none;
  const file: Blob = await c.call('getFile', { query: { path: '/workspace/a' } });
  void file;
  await c.call('listSessions');
  await c.call('uploadFile', { params: { source: 'web' }, body: new FormData() });
  // @ts-expect-error the path parameter is required
  await c.call('getSession');
  // @ts-expect-error a body the route does not take
  await c.call('getInbox', { body: {} });
  // @ts-expect-error renameSession's body is {title}
  await c.call('renameSession', { params: { id: 'x' }, body: { name: 'T' } });
  // @ts-expect-error an upload is FormData
  await c.call('uploadFile', { params: { source: 'web' }, body: { file: 'x' } });
  // @ts-expect-error no such operation
  await c.call('listEverything');
}
void typed;

/** The parts of a call of `op` made from its route alone: every placeholder filled, a body of its kind. */
function partsOf(op: OperationId) {
  const r = ROUTE_TABLE[op];
  const params = Object.fromEntries([...r.path.matchAll(/\{(\w+)\}/g)].map(([, n]) => [n, `v-${n}`]));
  const body = !('body' in r) ? undefined : r.body === 'multipart' ? new FormData() : { probe: op };
  return { params, ...(body === undefined ? {} : { body }) };
}

describe('SkaldClient.call: every operation of ROUTES', () => {
  it('the table is complete (checked at compile time above)', () => {
    expect(complete).toBe(true);
    expect(Object.keys(ROUTE_TABLE).sort()).toEqual([...OPERATION_IDS].sort());
  });

  it.each(OPERATION_IDS)('%s: its method and path, its body as JSON or multipart, with the bearer', async (op) => {
    const r = ROUTE_TABLE[op];
    const { client: c, calls } = client(() =>
      r.response === 'none'
        ? new Response(null, { status: 204 })
        : r.response === 'binary'
          ? new Response('bytes', { status: 200, headers: { 'content-type': 'application/octet-stream' } })
          : json(200, { answer: op }),
    );
    const out = await c.call(op, partsOf(op) as never);
    const [call] = calls;
    expect(call.init.method).toBe(r.method);
    expect(call.url).toBe(`http://gw${r.path.replace(/\{(\w+)\}/g, (_, n: string) => `v-${n}`)}`);
    const headers = call.init.headers as Record<string, string>;
    expect(headers.authorization).toBe('Bearer t');
    if (!('body' in r)) expect(call.init.body).toBeUndefined();
    else if (r.body === 'multipart') {
      expect(call.init.body).toBeInstanceOf(FormData);
      expect(headers['content-type']).toBeUndefined();
    } else {
      expect(JSON.parse(call.init.body as string)).toEqual({ probe: op });
      expect(headers['content-type']).toBe('application/json');
    }
    if (r.response === 'none') expect(out).toBeUndefined();
    else if (r.response === 'binary') await expect((out as unknown as Blob).text()).resolves.toBe('bytes');
    else expect(out).toEqual({ answer: op });
  });

  it('a body to a route without one, a JSON body to an upload or FormData to a JSON route is refused before any request', async () => {
    const { client: c, calls } = client();
    await expect(c.call('getInbox', { body: {} } as never)).rejects.toThrow('getInbox takes no body');
    await expect(c.call('uploadFile', { params: { source: 'web' }, body: {} } as never)).rejects.toThrow(
      'uploadFile takes a FormData body',
    );
    await expect(c.call('renameSession', { params: { id: 'x' }, body: new FormData() } as never)).rejects.toThrow(
      'renameSession takes a JSON body',
    );
    await expect(c.call('nope' as OperationId)).rejects.toThrow('unknown operation "nope"');
    expect(calls).toHaveLength(0);
  });

  it('property: any operationId that is not one of ROUTES is refused by name, none reaches fetch', async () => {
    const { client: c, calls } = client();
    await fc.assert(
      fc.asyncProperty(fc.string({ maxLength: 40 }), async (op) => {
        fc.pre(!Object.prototype.hasOwnProperty.call(ROUTE_TABLE, op));
        await expect(c.call(op as OperationId)).rejects.toThrow(`unknown operation "${op}"`);
      }),
      { seed: 37, numRuns: 2000 },
    );
    await expect(c.call('constructor' as OperationId)).rejects.toThrow('unknown operation');
    await expect(c.call('__proto__' as OperationId)).rejects.toThrow('unknown operation');
    expect(calls).toHaveLength(0);
  });

  it('raw answers the Response: a streamed body is read as it comes', async () => {
    const stream = new ReadableStream<Uint8Array>({
      start(ctl) {
        ctl.enqueue(new TextEncoder().encode('data: a\n\n'));
        ctl.enqueue(new TextEncoder().encode('data: [DONE]\n\n'));
        ctl.close();
      },
    });
    const { client: c } = client(() => new Response(stream, { headers: { 'content-type': 'text/event-stream' } }));
    const res = await c.raw('createChatCompletion', { body: { model: 'skald/main', messages: [], stream: true } });
    const chunks: string[] = [];
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>)
      chunks.push(new TextDecoder().decode(chunk));
    expect(chunks.join('')).toBe('data: a\n\ndata: [DONE]\n\n');
  });

  it('a refusal of an operation is the SkaldApiError of its answer', async () => {
    const { client: c } = client(() => json(404, { error: { code: 'not_found', message: 'no such session' } }));
    await expect(c.call('getSession', { params: { id: 'x' } })).rejects.toMatchObject({
      status: 404,
      code: 'not_found',
      message: 'no such session',
    });
  });
});

describe('SkaldClient.pages / items', () => {
  const sessions = (n: number, from: number) => Array.from({ length: n }, (_, i) => ({ id: `s${from + i}` }));

  it('page routes: the next page while fewer items than total were read', async () => {
    const { client: c, calls } = client((url) => {
      const page = Number(new URL(url).searchParams.get('page') ?? '1');
      return json(200, { items: sessions(page < 3 ? 2 : 1, (page - 1) * 2), total: 5, page, per_page: 2 });
    });
    const ids: string[] = [];
    for await (const s of c.items('listSessions', { query: { per_page: 2 } })) ids.push(s.id);
    expect(ids).toEqual(['s0', 's1', 's2', 's3', 's4']);
    expect(calls.map((x) => new URL(x.url).search)).toEqual([
      '?per_page=2',
      '?per_page=2&page=2',
      '?per_page=2&page=3',
    ]);
  });

  it('before routes: `before` is the oldest item of the page (first of an oldest-first page, last of a newest-first one)', async () => {
    const { client: c, calls } = client((url) => {
      const before = new URL(url).searchParams.get('before');
      if (url.includes('/messages'))
        return json(
          200,
          before ? { items: [{ id: 'm1' }], has_more: false } : { items: [{ id: 'm2' }, { id: 'm3' }], has_more: true },
        );
      return json(
        200,
        before ? { items: [{ id: 'n1' }], has_more: false } : { items: [{ id: 'n3' }, { id: 'n2' }], has_more: true },
      );
    });
    const pages = [];
    for await (const p of c.pages('listMessages', { params: { source: 'web' } })) pages.push(p.items.map((m) => m.id));
    expect(pages).toEqual([['m2', 'm3'], ['m1']]);
    const notes: string[] = [];
    for await (const n of c.items('listNotifications', {})) notes.push(n.id);
    expect(notes).toEqual(['n3', 'n2', 'n1']);
    expect(calls.map((x) => new URL(x.url).searchParams.get('before'))).toEqual([null, 'm2', null, 'n2']);
  });

  it('bounded: a server that always has more is read for maxPages pages; a cursor that does not move ends it', async () => {
    let n = 0;
    const { client: c, calls } = client(() => json(200, { items: [{ id: `x${n++}` }], has_more: true }));
    let read = 0;
    for await (const _ of c.pages('listNotifications', {}, { maxPages: 7 })) read++;
    expect([read, calls.length]).toEqual([7, 7]);
    const stuck = client(() => json(200, { items: [{ id: 'same' }], has_more: true }));
    let pages = 0;
    for await (const _ of stuck.client.pages('listNotifications', {})) pages++;
    expect(pages).toBe(2);
    const endless = client(() => json(200, { items: [{ id: 'a' }], total: 1e9, page: 1, per_page: 1 }));
    let all = 0;
    for await (const _ of endless.client.items('listSessions', {})) all++;
    expect(all).toBe(100);
  });

  it('an empty page ends the iteration; an operation that does not page is refused', async () => {
    const { client: c } = client(() => json(200, { items: [], total: 10, page: 1, per_page: 20 }));
    let pages = 0;
    for await (const _ of c.pages('listSessions', {})) pages++;
    expect(pages).toBe(1);
    const it = c.pages('getInbox' as never, {})[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toThrow('getInbox does not answer in pages');
  });
});
