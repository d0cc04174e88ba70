import type { Msg } from 'nats';
import { headersOf } from './safe-headers';

/** The header a publisher stamps each published message with: when it sent it (ms since the epoch). */
export const SENT_AT_HEADER = 'x-skald-sent-at';

const LINE_START = new TextEncoder().encode(`\r\n${SENT_AT_HEADER}:`);
const CR = 13;
const LF = 10;
const utf8 = new TextDecoder();
const SPACE = 32;
const ZERO = 48;
const NINE = 57;
/** Digits up to this many are exact in a double, summed one by one as `Number` would read them. */
const EXACT_DIGITS = 15;

/** The part of nats.js's MsgImpl (nats 2.29.x) that holds the raw message: header block length and bytes. */
interface RawMsg {
  _rdata?: unknown;
  _msg?: { hdr?: unknown };
}

/**
 * The sent-at stamp of a message, or null when it has none (or not a positive finite number), read
 * from the raw header block: the value `msg.headers.get(SENT_AT_HEADER)` answers, without building
 * the header object (nats.js decodes the whole block into a map of canonicalised keys on first
 * access: a tenth of the gateway's own work per forwarded event). When the message is not the shape
 * this was written against, it asks `msg.headers` (the unit spec pins the shape and compares the
 * two over generated header blocks).
 */
export function sentAtOf(msg: Msg): number | null {
  const raw = msg as unknown as RawMsg;
  const hdr = raw._msg?.hdr;
  let value: number;
  if (raw._rdata instanceof Uint8Array && typeof hdr === 'number' && hdr <= raw._rdata.length) {
    if (hdr <= 0) return null;
    value = sentAtInBlock(raw._rdata, hdr);
  } else {
    value = Number(headersOf(msg)?.get(SENT_AT_HEADER));
  }
  return Number.isFinite(value) && value > 0 ? value : null;
}

/**
 * The first `x-skald-sent-at` value of a header block (`NATS/1.0…\r\nkey: value\r\n…\r\n\r\n`, its
 * first `end` bytes) as `Number` reads it after nats.js's decoding (UTF-8, the line after the first
 * colon, trimmed); NaN when the block has no such line. The key is matched exactly, as `get` does.
 */
export function sentAtInBlock(bytes: Uint8Array, end: number): number {
  const n = LINE_START.length;
  const last = Math.min(end, bytes.length);
  const block = last < bytes.length ? bytes.subarray(0, last) : bytes;
  // each CR (found natively) is a possible line start; the rest of the key is compared byte by byte
  outer: for (let i = block.indexOf(CR); i >= 0 && i + n <= last; i = block.indexOf(CR, i + 1)) {
    for (let j = 1; j < n; j++) if (block[i + j] !== LINE_START[j]) continue outer;
    const from = i + n;
    let to = from;
    while (to < last && !(block[to] === CR && to + 1 < last && block[to + 1] === LF)) to++;
    return digitsValue(block, from, to) ?? Number(utf8.decode(block.subarray(from, to)).trim());
  }
  return Number.NaN;
}

/**
 * The value of what a publisher writes (`: ` then decimal digits), or null for anything else (which
 * the caller reads as nats.js would): spaces, then 1 to 15 ASCII digits, then the end.
 */
function digitsValue(bytes: Uint8Array, from: number, to: number): number | null {
  let i = from;
  while (i < to && bytes[i] === SPACE) i++;
  if (i === to || to - i > EXACT_DIGITS) return null;
  let v = 0;
  for (; i < to; i++) {
    const b = bytes[i];
    if (b < ZERO || b > NINE) return null;
    v = v * 10 + (b - ZERO);
  }
  return v;
}
