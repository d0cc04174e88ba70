import { expect } from '@jest/globals';
import fc from 'fast-check';
import { decodeUtf8Strict, JSON_LIMITS, parseBoundedJson, scanJsonStructure } from './bounded-json';

// A failing property prints its seed; FC_SEED=<seed> replays it.
const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
const params = { seed, numRuns: 2000 };

/** The nesting depth of a parsed value, the top level counting 1 for a container (as the scanner counts). */
function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (v && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

/** The reference rule for prototype keys, on the parsed value. */
function hasForbiddenKey(v: unknown, parentKey?: string): boolean {
  if (Array.isArray(v)) return v.some((x) => hasForbiddenKey(x));
  if (!v || typeof v !== 'object') return false;
  return Object.entries(v).some(
    ([k, x]) => k === '__proto__' || (k === 'prototype' && parentKey === 'constructor') || hasForbiddenKey(x, k),
  );
}

const nested = (depth: number, open = '[', close = ']'): string => open.repeat(depth) + close.repeat(depth);

describe('bounded JSON: structure scan before JSON.parse', () => {
  it('agrees with JSON.parse on every JSON text within the limits (differential, generated values)', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 8 }), fc.boolean(), (v, pretty) => {
        const text = JSON.stringify(v, null, pretty ? 2 : undefined);
        const r = parseBoundedJson(text);
        if (hasForbiddenKey(JSON.parse(text)))
          expect(r).toMatchObject({ ok: false, problem: { kind: 'forbidden_key' } });
        else expect(r).toEqual({ ok: true, value: JSON.parse(text) as unknown });
      }),
      params,
    );
  });

  it('measures the depth exactly: refused above the limit, accepted at it, with the path to where it went too deep', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 1, max: 80 }), (depth, maxDepth) => {
        const text = `{"type":${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}}`;
        const limits = { ...JSON_LIMITS, maxDepth };
        const r = scanJsonStructure(text, limits);
        if (depth + 1 <= maxDepth) expect(r).toBeNull();
        else {
          expect(r?.kind).toBe('too_deep');
          const segments = ['type', ...Array<string>(Math.max(0, maxDepth - 1)).fill('a')].slice(0, maxDepth);
          expect(r?.field).toBe(segments.join('.').slice(0, 256) + (segments.join('.').length > 256 ? '…' : ''));
        }
        expect(depthOf(JSON.parse(text))).toBe(depth + 1);
      }),
      params,
    );
  });

  it('refuses 100,000 levels of nesting in one linear pass (milliseconds), never reaching JSON.parse', () => {
    const parse = jest.spyOn(JSON, 'parse');
    for (const text of [nested(100_000), nested(100_000, '{"a":', '}'), `{"type":${nested(10_000, '{"a":', '}')}}`]) {
      const started = performance.now();
      const r = parseBoundedJson(text);
      expect(r).toMatchObject({ ok: false, problem: { kind: 'too_deep' } });
      expect(performance.now() - started).toBeLessThan(100);
    }
    expect(parse).not.toHaveBeenCalled();
    parse.mockRestore();
  });

  it('names duplicate keys, with escapes resolved, and agrees with a Set of the decoded keys (generated)', () => {
    const key = fc.constantFrom('a', 'b', 'type', 'é', '\u0000', 'a"b');
    fc.assert(
      fc.property(fc.array(fc.tuple(key, fc.boolean()), { maxLength: 8 }), (entries) => {
        // the same key spelled with \u escapes or plainly: both denote it
        const spelled = entries.map(([k, escape]) =>
          escape
            ? `"${[...k].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}"`
            : JSON.stringify(k),
        );
        const text = `{"outer":{${spelled.map((s, i) => `${s}:${i}`).join(',')}}}`;
        const decoded = entries.map(([k]) => k);
        const firstDup = decoded.findIndex((k, i) => decoded.indexOf(k) !== i);
        const r = scanJsonStructure(text);
        if (firstDup < 0) expect(r).toBeNull();
        else expect(r).toMatchObject({ kind: 'duplicate_key', field: `outer.${decoded[firstDup]}` });
      }),
      params,
    );
  });

  it('refuses __proto__ anywhere and constructor.prototype, however spelled; plain constructor / prototype keys are data', () => {
    for (const [text, field] of [
      ['{"__proto__":{"admin":true}}', '__proto__'],
      ['{"a":[1,{"__proto__":1}]}', 'a.1.__proto__'],
      ['{"\\u005f\\u005fproto\\u005f\\u005f":{}}', '__proto__'],
      ['{"constructor":{"prototype":{"polluted":1}}}', 'constructor.prototype'],
    ] as const) {
      expect(parseBoundedJson(text)).toEqual({
        ok: false,
        problem: { kind: 'forbidden_key', field, message: expect.stringContaining('is not allowed') },
      });
    }
    const r = parseBoundedJson('{"constructor":"x","prototype":{"a":1},"b":{"constructor":{"name":"y"}}}');
    expect(r.ok).toBe(true);
    const value = (r as { value: Record<string, unknown> }).value;
    expect(Object.getPrototypeOf(value)).toBe(Object.prototype);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('reads brackets, quotes and backslashes inside strings as text', () => {
    const text = JSON.stringify({ s: '[{"a":1}]\\', t: '\\"{', u: ['}', ']', '\\\\"'] });
    expect(scanJsonStructure(text, { ...JSON_LIMITS, maxDepth: 2 })).toBeNull();
    expect(parseBoundedJson(text)).toEqual({ ok: true, value: JSON.parse(text) as unknown });
  });

  it('bounds the keys of one object and the bytes of the text', () => {
    const obj = (n: number): string => `{${Array.from({ length: n }, (_, i) => `"k${i}":0`).join(',')}}`;
    expect(scanJsonStructure(obj(1000))).toBeNull();
    expect(scanJsonStructure(`{"x":${obj(1001)}}`)).toMatchObject({ kind: 'too_many_keys', field: 'x' });
    expect(parseBoundedJson(`"${'x'.repeat(JSON_LIMITS.maxBytes - 2)}"`).ok).toBe(true);
    expect(parseBoundedJson(`"${'x'.repeat(JSON_LIMITS.maxBytes - 1)}"`)).toMatchObject({
      ok: false,
      problem: { kind: 'too_large' },
    });
    // counted in UTF-8 bytes, not UTF-16 units
    expect(parseBoundedJson(`"${'é'.repeat(JSON_LIMITS.maxBytes / 2)}"`)).toMatchObject({ ok: false });
  });

  it('never throws on any text, and accepts exactly what JSON.parse accepts when the structure is within limits', () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({ unit: 'binary', maxLength: 200 }),
          fc.string({ unit: fc.constantFrom('{', '}', '[', ']', '"', '\\', ',', ':', '1', ' ', 'a'), maxLength: 60 }),
        ),
        (text) => {
          const r = parseBoundedJson(text);
          let parses = true;
          try {
            JSON.parse(text);
          } catch {
            parses = false;
          }
          if (r.ok) expect(parses).toBe(true);
          else if (r.problem.kind === 'not_json') expect(parses).toBe(false);
        },
      ),
      { seed, numRuns: 5000 },
    );
  });

  it('keeps hostile keys short in messages: a 100 kB key is cut', () => {
    const long = 'k'.repeat(100_000);
    const r = scanJsonStructure(`{"${long}":1,"${long}":2}`);
    expect(r?.kind).toBe('duplicate_key');
    expect(r!.message.length).toBeLessThan(300);
    expect(r!.field!.length).toBeLessThan(300);
  });
});

describe('strict UTF-8', () => {
  it('refuses invalid bytes instead of replacing them, keeps lone-surrogate escapes as JSON text, drops a BOM', () => {
    expect(decodeUtf8Strict(Buffer.from([0x7b, 0xff, 0x7d]))).toBeNull();
    expect(decodeUtf8Strict(Buffer.from([0xed, 0xa0, 0x80]))).toBeNull(); // an encoded surrogate
    expect(decodeUtf8Strict(Buffer.from('\ufeff{"a":"\\ud800"}', 'utf8'))).toBe('{"a":"\\ud800"}');
    expect(decodeUtf8Strict(Buffer.from('{"a":"\u2028\u00a0\u202e\u0000"}', 'utf8'))).toBe(
      '{"a":"\u2028\u00a0\u202e\u0000"}',
    );
  });
});
