import htmlEncodingSniffer from 'html-encoding-sniffer';
import { decode, labelToName } from 'whatwg-encoding';

/** A Content-Type header taken apart: the media type (lower case) and its charset label, if any. */
export function parseContentType(header: string | null): { mediaType: string; charset: string | null } {
  const [type = '', ...params] = (header ?? '').split(';');
  let charset: string | null = null;
  for (const p of params) {
    const m = /^\s*charset\s*=\s*"?([^";\s]+)"?\s*$/i.exec(p);
    if (m) charset = m[1];
  }
  return { mediaType: type.trim().toLowerCase(), charset };
}

/**
 * A response body as text, by the WHATWG encoding rules: a byte order mark first, then the
 * Content-Type's charset, then (for HTML) a `<meta charset>` in the first 1024 bytes, else UTF-8
 * (windows-1252 for HTML, as browsers do). html-encoding-sniffer decides, whatwg-encoding
 * (iconv-lite) decodes; an unknown label falls back the same way.
 */
export function decodeBody(bytes: Uint8Array, mediaType: string, charset: string | null): string {
  const html = mediaType === 'text/html' || mediaType === 'application/xhtml+xml';
  const transport = charset && labelToName(charset) ? charset : undefined;
  const encoding = html
    ? htmlEncodingSniffer(bytes, { transportLayerEncodingLabel: transport, defaultEncoding: 'windows-1252' })
    : (bomEncoding(bytes) ?? (transport ? labelToName(transport) : null) ?? 'UTF-8');
  return decode(bytes, encoding ?? 'UTF-8');
}

function bomEncoding(b: Uint8Array): string | null {
  if (b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) return 'UTF-8';
  if (b[0] === 0xfe && b[1] === 0xff) return 'UTF-16BE';
  if (b[0] === 0xff && b[1] === 0xfe) return 'UTF-16LE';
  return null;
}
