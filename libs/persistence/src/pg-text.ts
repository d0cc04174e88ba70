/**
 * Postgres `text` cannot hold U+0000, and the driver turns a lone UTF-16 surrogate into U+FFFD on
 * the way in. Strings that came from a model, a tool or a user go through this codec so that any
 * JavaScript string survives a round trip exactly:
 *
 * - a string without NUL, lone surrogates or a leading {@link PG_TEXT_MARK} is stored as it is
 *   (so every ordinary value reads the same with or without `fromPgText`);
 * - any other string is stored as the mark followed by its JSON text, which `JSON.stringify`
 *   writes with `\u0000` and `\udXXX` escapes (plain ASCII).
 */
export const PG_TEXT_MARK = '\uffff';

/** True when a string contains NUL or an unpaired surrogate (what Postgres text cannot keep). */
export function hasPoisonCodeUnits(s: string): boolean {
  // eslint-disable-next-line no-control-regex
  return /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/.test(s);
}

export function toPgText(s: string): string;
export function toPgText(s: string | null): string | null;
export function toPgText(s: string | null | undefined): string | null;
export function toPgText(s: string | null | undefined): string | null {
  if (s === null || s === undefined) return null;
  if (!s.startsWith(PG_TEXT_MARK) && !hasPoisonCodeUnits(s)) return s;
  return PG_TEXT_MARK + JSON.stringify(s);
}

export function fromPgText(s: string): string;
export function fromPgText(s: unknown): string | null;
export function fromPgText(s: unknown): string | null {
  if (s === null || s === undefined) return null;
  const text = typeof s === 'string' ? s : JSON.stringify(s);
  if (!text.startsWith(PG_TEXT_MARK)) return text;
  try {
    const v = JSON.parse(text.slice(PG_TEXT_MARK.length)) as unknown;
    return typeof v === 'string' ? v : text;
  } catch {
    return text;
  }
}

/**
 * JSON text for a `text` column that holds a JSON document (events, previews): `JSON.stringify`
 * escapes NUL and lone surrogates, which a `jsonb` column would reject.
 */
export function toJsonText(value: unknown): string {
  return JSON.stringify(value);
}

/** Reads a JSON document column written by {@link toJsonText} (or a legacy `jsonb` value). */
export function fromJsonText<T = unknown>(value: unknown): T {
  return (typeof value === 'string' ? JSON.parse(value) : value) as T;
}

/** The mark as it may appear in JSON text: raw, or as a `\uFFFF` escape in any case (a `json` column's verbatim text). */
const MARK_IN_JSON = /\uffff|\\u[fF]{4}/;

/**
 * JSON text read from Postgres (a `json_agg`, a `row_to_json`), parsed, with every string and key
 * through {@link fromPgText}: what `deepFromPgText(JSON.parse(text))` gives. A text in which the
 * mark cannot occur (nearly all) has no coded string, so it is returned as parsed, without the
 * copy of every object and array the deep decode makes.
 */
export function parseJsonText<T = unknown>(text: string): T {
  const parsed = JSON.parse(text) as T;
  return MARK_IN_JSON.test(text) ? deepFromPgText(parsed) : parsed;
}

/** {@link toPgText} on every string (and key) of a JSON value, for a `jsonb` column. */
export function deepToPgText<T>(value: T): T {
  return mapStrings(value, toPgText) as T;
}

/** The inverse of {@link deepToPgText}. */
export function deepFromPgText<T>(value: T): T {
  return mapStrings(value, (s) => fromPgText(s)) as T;
}

function mapStrings(value: unknown, f: (s: string) => string): unknown {
  if (typeof value === 'string') return f(value);
  if (Array.isArray(value)) return value.map((v) => mapStrings(v, f));
  if (isPlainObject(value)) {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value))
      Object.defineProperty(out, f(k), {
        value: mapStrings(v, f),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    return out;
  }
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object') return false;
  const proto = Object.getPrototypeOf(value) as unknown;
  return proto === Object.prototype || proto === null;
}

/** Query parameters with every string through {@link toPgText} (arrays of strings too). */
export function pgParams(params: readonly unknown[]): unknown[] {
  return params.map((p) =>
    typeof p === 'string'
      ? toPgText(p)
      : Array.isArray(p)
        ? p.map((x: unknown) => (typeof x === 'string' ? toPgText(x) : x))
        : p,
  );
}

/** A row read back: every string (also inside `jsonb` values) through {@link fromPgText}. */
export function decodeRow<T>(row: T): T {
  return deepFromPgText(row);
}
