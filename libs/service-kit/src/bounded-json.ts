/**
 * JSON from the outside world (WS frames, REST bodies) is checked for its shape before anything
 * walks it: one linear pass over the raw text bounds the nesting depth and the keys per object,
 * refuses duplicate keys and prototype keys, and only then does `JSON.parse` (no reviver) build
 * the value. Recursive walkers further in (zod, `JSON.stringify`, loggers) therefore never meet a
 * value deeper than `maxDepth`.
 */
export interface JsonLimits {
  /** UTF-8 bytes of the whole text. */
  maxBytes: number;
  /** Nested objects and arrays; the top-level value counts as 1. */
  maxDepth: number;
  /** Keys of one object. */
  maxKeys: number;
}

/** The limits every gateway input (frame or body) is held to; PROTOCOL.md names the 1 MiB. */
export const JSON_LIMITS: Readonly<JsonLimits> = Object.freeze({
  maxBytes: 1024 * 1024,
  maxDepth: 64,
  maxKeys: 1000,
});

export type JsonProblemKind =
  'too_large' | 'too_deep' | 'too_many_keys' | 'duplicate_key' | 'forbidden_key' | 'not_json';

export interface JsonProblem {
  kind: JsonProblemKind;
  /** A sentence for the client; never echoes more than a short, cut key of the input. */
  message: string;
  /** Where in the value, dotted like zod paths (`attachments.0.path`); absent at the top level. */
  field?: string;
}

export type BoundedJsonResult = { ok: true; value: unknown } | { ok: false; problem: JsonProblem };

/** Keys that would reach an object's prototype through `obj[key] = …` or a merge. */
const FORBIDDEN_KEY = '__proto__';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const LBRACE = 0x7b;
const RBRACE = 0x7d;
const LBRACKET = 0x5b;
const RBRACKET = 0x5d;
const COMMA = 0x2c;

const MAX_SEGMENT_CHARS = 64;
const MAX_FIELD_CHARS = 256;

/** A path for messages: each segment and the whole cut short, so a hostile key is never echoed in full. */
export function formatJsonPath(path: readonly string[]): string | undefined {
  if (path.length === 0) return undefined;
  const joined = path.map(cut).join('.');
  return joined.length > MAX_FIELD_CHARS ? `${joined.slice(0, MAX_FIELD_CHARS)}…` : joined;
}

function problem(kind: JsonProblemKind, what: string, path: readonly string[]): JsonProblem {
  const field = formatJsonPath(path);
  return { kind, message: field ? `${field}: ${what}` : what, ...(field ? { field } : {}) };
}

/**
 * One pass over the text, O(length), memory O(depth + keys of the open objects). Returns the first
 * structural problem, or null when the text's structure is within the limits. It does not decide
 * whether the text is JSON: `JSON.parse` does, afterwards. Text that is not JSON may pass here (and
 * then fail to parse); JSON that passes here has exactly the depth and keys measured.
 */
export function scanJsonStructure(text: string, limits: JsonLimits = JSON_LIMITS): JsonProblem | null {
  const n = text.length;
  // per open container: is it an object, its keys so far, and the path segment of its current child
  const isObject: boolean[] = [];
  const keys: Array<Set<string> | null> = [];
  const path: string[] = [];
  const index: number[] = [];
  let depth = 0;
  let expectKey = false;
  let i = 0;
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === QUOTE) {
      const end = stringEnd(text, i);
      if (end < 0) return null; // unterminated: not JSON, JSON.parse says so
      if (depth > 0 && isObject[depth - 1] && expectKey) {
        const key = decodeKey(text, i, end);
        if (key === null) return null; // a bad escape: not JSON
        const own = keys[depth - 1] as Set<string>;
        const at = (): string[] => path.slice(0, depth - 1);
        if (
          key === FORBIDDEN_KEY ||
          (key === 'prototype' && depth >= 2 && isObject[depth - 2] && path[depth - 2] === 'constructor')
        )
          return problem('forbidden_key', `the key "${key}" is not allowed`, [...at(), key]);
        if (own.has(key)) return problem('duplicate_key', `duplicate key "${cut(key)}"`, [...at(), key]);
        own.add(key);
        if (own.size > limits.maxKeys)
          return problem('too_many_keys', `an object may have at most ${limits.maxKeys} keys`, at());
        path[depth - 1] = key;
        expectKey = false;
      }
      i = end + 1;
      continue;
    }
    if (c === LBRACE || c === LBRACKET) {
      if (depth >= limits.maxDepth)
        return problem('too_deep', `nesting deeper than ${limits.maxDepth} levels`, path.slice(0, depth));
      const obj = c === LBRACE;
      isObject[depth] = obj;
      keys[depth] = obj ? new Set() : null;
      index[depth] = 0;
      path[depth] = obj ? '' : '0';
      depth++;
      expectKey = obj;
    } else if (c === RBRACE || c === RBRACKET) {
      if (depth === 0) return null; // unbalanced: not JSON
      depth--;
      keys[depth] = null;
      expectKey = false;
    } else if (c === COMMA && depth > 0) {
      if (isObject[depth - 1]) expectKey = true;
      else path[depth - 1] = String(++index[depth - 1]);
    }
    i++;
  }
  return null;
}

/** The index of the quote that closes the string opening at `start`, or -1. */
function stringEnd(text: string, start: number): number {
  let j = start + 1;
  for (;;) {
    const q = text.indexOf('"', j);
    if (q < 0) return -1;
    let backslashes = 0;
    for (let k = q - 1; k > start && text.charCodeAt(k) === BACKSLASH; k--) backslashes++;
    if (backslashes % 2 === 0) return q;
    j = q + 1;
  }
}

/** The key a JSON string literal denotes (escapes resolved), or null when its escapes are invalid. */
function decodeKey(text: string, open: number, close: number): string | null {
  const raw = text.slice(open + 1, close);
  if (!raw.includes('\\')) return raw;
  try {
    return JSON.parse(`"${raw}"`) as string;
  } catch {
    return null;
  }
}

function cut(s: string): string {
  return s.length > MAX_SEGMENT_CHARS ? `${s.slice(0, MAX_SEGMENT_CHARS)}…` : s;
}

/** Byte size, structure, then `JSON.parse`: a value that is within every limit, or the first problem. */
export function parseBoundedJson(text: string, limits: JsonLimits = JSON_LIMITS): BoundedJsonResult {
  if (text.length > limits.maxBytes || Buffer.byteLength(text, 'utf8') > limits.maxBytes)
    return { ok: false, problem: problem('too_large', `larger than ${limits.maxBytes} bytes`, []) };
  const found = scanJsonStructure(text, limits);
  if (found) return { ok: false, problem: found };
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false, problem: problem('not_json', 'not valid JSON', []) };
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: false });

/** The text of UTF-8 bytes, or null when they are not valid UTF-8 (never a lossy replacement). */
export function decodeUtf8Strict(bytes: Uint8Array): string | null {
  try {
    return utf8.decode(bytes);
  } catch {
    return null;
  }
}
