/**
 * Reading a message that is forwarded as it was published (a session event on its way to the
 * sockets): the publisher's text is handed on unchanged, so what is checked here is what makes the
 * text safe to hand on — bounded, UTF-8, JSON, no prototype key anywhere — plus the envelope the
 * caller reads from the parsed value. The body's own schema is the publisher's business.
 */

/** Bytes a forwarded message may have: the NATS server's default `max_payload`. */
export const FORWARD_MAX_BYTES = 1024 * 1024;

export type ForwardedRead<E> =
  | { ok: true; text: string; envelope: E }
  | { ok: false; problem: 'too_large' | 'not_utf8' | 'not_json' | 'prototype_key' | 'no_envelope' };

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Checks the bytes and reads the envelope; never throws (unless `readEnvelope` does). */
export function readForwarded<E>(
  bytes: Uint8Array,
  readEnvelope: (value: unknown) => E | null,
  maxBytes = FORWARD_MAX_BYTES,
): ForwardedRead<E> {
  if (bytes.byteLength > maxBytes) return { ok: false, problem: 'too_large' };
  let text: string;
  try {
    text = utf8.decode(bytes);
  } catch {
    return { ok: false, problem: 'not_utf8' };
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return { ok: false, problem: 'not_json' };
  }
  if (hasPrototypeKey(text, value)) return { ok: false, problem: 'prototype_key' };
  const envelope = readEnvelope(value);
  if (envelope === null) return { ok: false, problem: 'no_envelope' };
  return { ok: true, text, envelope };
}

/**
 * Whether the value (parsed from `text`) has a key that reaches a prototype through a client's
 * `obj[key] = …` or merge: `__proto__`, or `prototype` inside a `constructor` object. The text
 * decides first: such a key is spelled out or escaped (`\u…`), so text with neither is not walked.
 * The walk is iterative (a deeply nested value cannot overflow the stack) and visits each value once.
 */
export function hasPrototypeKey(text: string, value: unknown): boolean {
  if (!text.includes('__proto__') && !text.includes('prototype') && !text.includes('\\u')) return false;
  const stack: unknown[] = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v !== 'object' || v === null) continue;
    if (Array.isArray(v)) {
      for (const item of v) stack.push(item);
      continue;
    }
    for (const key of Object.keys(v)) {
      const child = (v as Record<string, unknown>)[key];
      if (key === '__proto__') return true;
      if (key === 'constructor' && typeof child === 'object' && child !== null && Object.hasOwn(child, 'prototype'))
        return true;
      stack.push(child);
    }
  }
  return false;
}
