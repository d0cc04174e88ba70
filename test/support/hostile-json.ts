// Generators of hostile JSON-ish input for attack tests: trees that serialise to text a JSON
// serialiser would never write (duplicate keys, prototype keys, nesting far past any limit, huge
// strings, odd unicode, invalid UTF-8, not JSON at all), each with the generator's own verdict on
// whether the gateway must refuse its structure. That verdict is computed on the tree, not the text,
// so it is an oracle independent of the gateway's scanner.
import fc from 'fast-check';

export type Node =
  | { k: 'val'; v: unknown }
  | { k: 'raw'; text: string }
  | { k: 'obj'; entries: Array<[string, Node]> }
  | { k: 'arr'; items: Node[] }
  | { k: 'deep'; depth: number; open: '[' | '{"a":' };

/** The gateway's limits as PROTOCOL.md and docs/security.md state them (not imported: the test states the rule). */
export const LIMITS = { maxBytes: 1024 * 1024, maxDepth: 64, maxKeys: 1000 };

/** One generated input: bytes to send, and whether its structure alone must get it refused. */
export interface Hostile {
  bytes: Buffer;
  /** Duplicate or prototype keys, too deep, too many keys, invalid UTF-8 or not JSON. */
  structurallyBad: boolean;
  /** No bytes at all: for REST, a request without a body. */
  empty?: boolean;
  /** Over LIMITS.maxBytes. */
  tooLarge: boolean;
  /** The parsed value, when the bytes are valid UTF-8 JSON. */
  value?: unknown;
  label: string;
}

export function serialise(n: Node): string {
  switch (n.k) {
    case 'val':
      return JSON.stringify(n.v) ?? 'null';
    case 'raw':
      return n.text;
    case 'obj':
      return `{${n.entries.map(([k, v]) => `${JSON.stringify(k)}:${serialise(v)}`).join(',')}}`;
    case 'arr':
      return `[${n.items.map(serialise).join(',')}]`;
    case 'deep':
      return `${n.open.repeat(n.depth)}0${(n.open === '[' ? ']' : '}').repeat(n.depth)}`;
  }
}

/** Depth as the gateway counts it: each object or array is a level. */
function depth(n: Node): number {
  switch (n.k) {
    case 'val':
      return n.v !== null && typeof n.v === 'object' ? valueDepth(n.v) : 0;
    case 'raw':
      return 0;
    case 'obj':
      return 1 + Math.max(0, ...n.entries.map(([, v]) => depth(v)));
    case 'arr':
      return 1 + Math.max(0, ...n.items.map(depth));
    case 'deep':
      return n.depth;
  }
}
function valueDepth(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(valueDepth));
  if (v !== null && typeof v === 'object') return 1 + Math.max(0, ...Object.values(v).map(valueDepth));
  return 0;
}

/** Duplicate keys, `__proto__`, `constructor.prototype`, or an object with too many keys, anywhere. */
function badKeys(n: Node, parentKey?: string): boolean {
  if (n.k === 'arr') return n.items.some((x) => badKeys(x));
  if (n.k !== 'obj') return false;
  const names = n.entries.map(([k]) => k);
  if (new Set(names).size !== names.length || names.length > LIMITS.maxKeys) return true;
  return n.entries.some(
    ([k, v]) => k === '__proto__' || (k === 'prototype' && parentKey === 'constructor') || badKeys(v, k),
  );
}

function hasRaw(n: Node): boolean {
  if (n.k === 'raw') return true;
  if (n.k === 'obj') return n.entries.some(([, v]) => hasRaw(v));
  if (n.k === 'arr') return n.items.some(hasRaw);
  return false;
}

const EDGE = [
  '\u0000',
  '\ud800',
  '\udfff',
  '\u00a0',
  '\u2028',
  '\u2029',
  '\ufeff',
  '\u202e',
  '\u2066',
  '\u200f',
  '\u0085',
];

/** Strings an attacker tries: control characters, lone surrogates, NBSP, line separators, BOM, bidi. */
export const hostileString: fc.Arbitrary<string> = fc.oneof(
  fc.string({ maxLength: 20 }),
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc.string({ unit: fc.constantFrom(...EDGE, 'a', '"', '\\', '{', '['), maxLength: 30 }),
  fc.constantFrom(
    '',
    '__proto__',
    'constructor',
    '../../etc/passwd',
    '/workspace/../..',
    'web',
    'auto',
    '%00',
    '$(id)',
  ),
);

const hugeLength = fc.constantFrom(64 * 1024, 512 * 1024, 512 * 1024 + 1, LIMITS.maxBytes - 256);

const scalar: fc.Arbitrary<Node> = fc.oneof(
  hostileString.map((v) => ({ k: 'val' as const, v })),
  fc
    .oneof(fc.integer(), fc.double(), fc.constantFrom(-0, 2 ** 53 + 1, -1, 1e308))
    .map((v) => ({ k: 'val' as const, v })),
  fc.constantFrom(true, false, null).map((v) => ({ k: 'val' as const, v })),
  fc.constantFrom('1e999', '-1e999', '00', '0x10', 'NaN', 'undefined', "'x'", '"\\x41"').map((text) => ({
    k: 'raw' as const,
    text,
  })),
);

/** A JSON-ish tree whose object keys come from `keys` (the fields a schema knows) plus hostile ones. */
export function tree(keys: readonly string[]): fc.Arbitrary<Node> {
  const key = fc.oneof(
    { weight: 6, arbitrary: keys.length > 0 ? fc.constantFrom(...keys) : hostileString },
    { weight: 1, arbitrary: fc.constantFrom('__proto__', 'constructor', 'prototype') },
    { weight: 1, arbitrary: hostileString },
  );
  const { node } = fc.letrec<{ node: Node }>((tie) => ({
    node: fc.oneof(
      { depthSize: 'small', withCrossShrink: true },
      { weight: 5, arbitrary: scalar },
      {
        weight: 2,
        arbitrary: fc
          .array(fc.tuple(key, tie('node')), { maxLength: 6 })
          .map((entries) => ({ k: 'obj' as const, entries })),
      },
      { weight: 1, arbitrary: fc.array(tie('node'), { maxLength: 4 }).map((items) => ({ k: 'arr' as const, items })) },
      {
        weight: 1,
        arbitrary: fc
          .tuple(fc.constantFrom(2, 63, 64, 65, 1000), fc.constantFrom('[' as const, '{"a":' as const))
          .map(([d, open]) => ({ k: 'deep' as const, depth: d, open })),
      },
    ),
  }));
  return node;
}

/** A top-level object with the schema's fields (and hostile extras), sometimes a huge string in one of them. */
export function hostileObject(keys: readonly string[], fixed: Record<string, Node> = {}): fc.Arbitrary<Node> {
  const t = tree(keys);
  const k = keys.length > 0 ? fc.constantFrom(...keys) : hostileString;
  return fc
    .tuple(
      fc.array(fc.tuple(k, t), { maxLength: 6 }),
      fc.oneof({ weight: 59, arbitrary: fc.constant(null) }, { weight: 1, arbitrary: fc.tuple(k, hugeLength) }),
      Object.keys(fixed).length > 0
        ? fc.option(fc.constantFrom(...Object.keys(fixed)), { nil: undefined })
        : fc.constant(undefined),
    )
    .map(([entries, huge, dupFixed]) => {
      const all: Array<[string, Node]> = [...Object.entries(fixed), ...entries];
      if (dupFixed) all.push([dupFixed, fixed[dupFixed]]);
      if (huge) all.push([huge[0], { k: 'val', v: 'x'.repeat(huge[1]) }]);
      return { k: 'obj' as const, entries: all };
    });
}

/** Nesting far past the limit (10,000 and 100,000 levels), alone or under a key: a few hundred kB each. */
export function veryDeep(keys: readonly string[]): fc.Arbitrary<Hostile> {
  return fc
    .tuple(
      fc.constantFrom(10_000, 100_000),
      fc.constantFrom('[' as const, '{"a":' as const),
      fc.option(keys.length > 0 ? fc.constantFrom(...keys) : hostileString, { nil: undefined }),
    )
    .map(([d, open, key]) => {
      const deep: Node = { k: 'deep', depth: d, open };
      return toHostile(key === undefined ? deep : { k: 'obj', entries: [[key, deep]] }, 'very-deep');
    });
}

/** Bytes that are not JSON: text, invalid UTF-8 (an encoded surrogate, a lone continuation byte, overlong forms). */
export const notJson: fc.Arbitrary<Hostile> = fc
  .oneof(
    fc.string({ unit: 'binary', maxLength: 80 }).map((s) => ({ s, bytes: Buffer.from(s, 'utf8') })),
    fc
      .tuple(
        fc.string({ maxLength: 20 }),
        fc.constantFrom([0xff], [0xc3, 0x28], [0xed, 0xa0, 0x80], [0x80], [0xc0, 0xaf], [0xf4, 0x90, 0x80, 0x80]),
      )
      .map(([s, bad]) => ({
        s,
        bytes: Buffer.concat([Buffer.from(`{"type":"${s.replace(/["\\]/g, '')}`), Buffer.from(bad), Buffer.from('"}')]),
      })),
  )
  .map(({ bytes }) => {
    let value: unknown;
    let parses = false;
    try {
      value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
      parses = true;
    } catch {
      /* not JSON, or not UTF-8 */
    }
    // an empty body is no body (REST); an empty frame is not JSON
    return { bytes, structurallyBad: !parses, empty: bytes.length === 0, tooLarge: false, value, label: 'not-json' };
  });

/** A generated tree as bytes, with the oracle's verdict. */
export function toHostile(n: Node, label: string): Hostile {
  const text = serialise(n);
  const bytes = Buffer.from(text, 'utf8');
  const tooLarge = bytes.length > LIMITS.maxBytes;
  const deep = depth(n) > LIMITS.maxDepth;
  let value: unknown;
  let parses = false;
  if (!deep && !tooLarge) {
    try {
      value = JSON.parse(text);
      parses = true;
    } catch {
      /* a raw token that is not JSON */
    }
  }
  return { bytes, tooLarge, structurallyBad: deep || badKeys(n) || (hasRaw(n) && !parses), value, label };
}
