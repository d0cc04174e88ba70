import { describe, expect, it } from '@jest/globals';
import fc from 'fast-check';
import { SkaldClient } from './client.ts';
import { SkaldApiError } from './errors.ts';
import { fillPath, queryString, RestCore, type FetchLike } from './rest.ts';
import { socketUrl } from './transport.ts';

/** A fetch that records each call and answers from a script. */
function fakeFetch(answer: (url: string, init: RequestInit) => Response) {
  const calls: Array<{ url: string; init: RequestInit }> = [];
  const fetch: FetchLike = async (url, init) => {
    calls.push({ url, init });
    return answer(url, init);
  };
  return { fetch, calls };
}
const json = (status: number, body: unknown, headers: Record<string, string> = {}) =>
  new Response(JSON.stringify(body), { status, headers: { 'content-type': 'application/json', ...headers } });

describe('fillPath', () => {
  it('property: any value becomes exactly one path segment, read back as it was, also by the WHATWG URL parser', () => {
    const dots = fc.constantFrom('.', '..', '%2e', '.%2E', '%2e%2e', './', '..\\', '\\..');
    fc.assert(
      fc.property(fc.oneof(fc.string({ minLength: 1, unit: 'binary' }), dots), (v) => {
        if (v === '.' || v === '..') return;
        const p = fillPath('/api/sessions/{id}/export', { id: v });
        // differential: the path fetch sends is the path built (no segment removed or added)
        expect(new URL(`http://gw${p}`).pathname).toBe(p);
        const segs = p.split('/');
        expect(segs).toHaveLength(5);
        expect(segs[4]).toBe('export');
        expect(decodeURIComponent(segs[3])).toBe(v);
        expect(segs[3]).not.toMatch(/[/?#]/);
      }),
      { seed: 37, numRuns: 3000 },
    );
  });

  it('a dot segment cannot climb: "." and ".." are refused, anything else stays inside its segment', () => {
    expect(() => fillPath('/api/{source}/messages', { source: '..' })).toThrow(
      'path parameter "source" cannot be ".."',
    );
    expect(() => fillPath('/api/{source}/messages', { source: '.' })).toThrow('cannot be "."');
    for (const v of ['../admin', '%2e%2e', '.%2e', '...'])
      expect(new URL(`http://gw${fillPath('/api/{source}/messages', { source: v })}`).pathname).toMatch(
        /^\/api\/[^/]+\/messages$/,
      );
  });

  it('names the missing, empty or unknown parameter', () => {
    expect(() => fillPath('/api/sessions/{id}', {})).toThrow('path parameter "id" of /api/sessions/{id} is missing');
    expect(() => fillPath('/api/sessions/{id}', { id: '' })).toThrow('"id"');
    expect(() => fillPath('/api/sessions', { id: 'x' })).toThrow('path parameter "id" is not in /api/sessions');
    // an inherited name is not a parameter
    expect(() => fillPath('/api/{constructor}', {})).toThrow('"constructor"');
  });

  it('queryString leaves out undefined values and encodes the rest', () => {
    expect(queryString({ a: 1, b: undefined, c: 'x y&z' })).toBe('?a=1&c=x+y%26z');
    expect(queryString({})).toBe('');
  });
});

describe('RestCore', () => {
  it('sends the bearer token and a JSON body; 204 answers undefined', async () => {
    const { fetch, calls } = fakeFetch(() => new Response(null, { status: 204 }));
    const rest = new RestCore({ baseUrl: 'http://gw', token: () => 'tok', fetch });
    await expect(rest.request({ method: 'DELETE', path: '/api/x/{id}' }, { params: { id: 'a' } })).resolves.toBe(
      undefined,
    );
    await rest.request({ method: 'POST', path: '/api/y' }, { body: { a: 1 } });
    expect(calls[0].url).toBe('http://gw/api/x/a');
    expect(calls[1].init).toMatchObject({
      method: 'POST',
      headers: { authorization: 'Bearer tok', 'content-type': 'application/json' },
      body: '{"a":1}',
    });
  });

  it('a route of the contracts (lowercase method) is sent with the method in capitals (fetch leaves `patch` as it is)', async () => {
    const { fetch, calls } = fakeFetch(() => json(200, {}));
    const rest = new RestCore({ baseUrl: 'http://gw', token: () => 'tok', fetch });
    await rest.request({ method: 'patch', path: '/api/sessions/{id}' }, { params: { id: 'a' }, body: { title: 't' } });
    expect(calls[0].init.method).toBe('PATCH');
  });

  it("a refusal is a SkaldApiError with the server's code, message, field and Retry-After", async () => {
    const { fetch } = fakeFetch(() =>
      json(429, { error: { code: 'rate_limited', message: 'slow down', field: 'x' } }, { 'retry-after': '7' }),
    );
    const rest = new RestCore({ baseUrl: '', token: () => null, fetch });
    const e = await rest.request({ method: 'GET', path: '/api/z' }).catch((x: unknown) => x);
    expect(e).toBeInstanceOf(SkaldApiError);
    expect(e).toMatchObject({ status: 429, code: 'rate_limited', message: 'slow down', field: 'x', retryAfter: 7 });
  });

  it('a refusal without a JSON body still says what failed; a 401 calls onUnauthorized', async () => {
    let told = 0;
    const { fetch } = fakeFetch(() => new Response('<html>', { status: 401, statusText: 'Unauthorized' }));
    const rest = new RestCore({ baseUrl: '', token: () => 'old', fetch, onUnauthorized: () => told++ });
    await expect(rest.request({ method: 'GET', path: '/api/z' })).rejects.toMatchObject({
      status: 401,
      code: 'error',
      message: 'Unauthorized',
    });
    expect(told).toBe(1);
  });

  it('an upload is multipart with exactly the field `file`; no JSON content type is forced on it', async () => {
    const { fetch, calls } = fakeFetch(() =>
      json(201, { path: '/workspace/uploads/a.txt', name: 'a.txt', mimetype: 'text/plain', filesize: 2 }),
    );
    const client = new SkaldClient({ baseUrl: 'http://gw/', token: 't', fetch });
    await client.upload('web', new Blob(['hi'], { type: 'text/plain' }), 'a.txt');
    expect(calls[0].url).toBe('http://gw/api/web/uploads');
    const body = calls[0].init.body as FormData;
    expect([...body.keys()]).toEqual(['file']);
    expect((body.get('file') as File).name).toBe('a.txt');
    expect(calls[0].init.headers).toEqual({ authorization: 'Bearer t' });
  });

  it('login keeps the token for the calls after it', async () => {
    const { fetch, calls } = fakeFetch((url) =>
      url.endsWith('/login')
        ? json(200, { token: 'jwt', expires_at: 'x', user: { id: 'u', email: 'e', role: 'user' } })
        : json(200, { ticket: 'tk' }),
    );
    const { client, user } = await SkaldClient.login({ baseUrl: 'http://gw', email: 'a@b.c', password: 'pw', fetch });
    expect(user.email).toBe('e');
    await expect(client.wsTicket()).resolves.toBe('tk');
    expect(calls[1].init.headers).toMatchObject({ authorization: 'Bearer jwt' });
  });
});

describe('socketUrl', () => {
  it('maps http to ws and https to wss, with the source and the ticket encoded', () => {
    expect(socketUrl('http://h:1/', 'web')).toBe('ws://h:1/api/ws?source=web');
    expect(socketUrl('https://h', 'cli', 'a&b')).toBe('wss://h/api/ws?source=cli&ticket=a%26b');
    expect(socketUrl('wss://h', 'web')).toBe('wss://h/api/ws?source=web');
    expect(() => socketUrl('', 'web')).toThrow('pass wsUrl');
  });
});
