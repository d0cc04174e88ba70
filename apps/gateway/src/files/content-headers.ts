import { lookup } from 'mime-types';

/** Types a browser shows without running anything: these may be `inline`; everything else is a download. */
const INLINE = new Set([
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
  'application/pdf',
  'image/png',
  'image/jpeg',
  'image/gif',
  'image/webp',
  'image/avif',
  'audio/mpeg',
  'audio/ogg',
  'audio/wav',
  'video/mp4',
  'video/webm',
]);

/** The content type of a workspace file, from its name (`application/octet-stream` when unknown). */
export function contentTypeOf(name: string): string {
  // `lookup` reads a bare word as an extension (`run` → makeself): only a name with one is looked up.
  return (/.\.[^.]+$/.test(name) && lookup(name)) || 'application/octet-stream';
}

/**
 * The headers a workspace file is served with. Nothing a user's workspace holds may run in the
 * page's origin: the type is never sniffed, a sandboxing CSP forbids scripts, plugins and
 * same-origin access even when a browser renders the body, and only passive types are `inline`
 * (HTML, SVG, XML, scripts and unknown types are attachments).
 */
export function fileHeaders(name: string, size: number): Record<string, string> {
  const type = contentTypeOf(name);
  const textual = type.startsWith('text/') || type === 'application/json';
  return {
    'Content-Type': textual ? `${type}; charset=utf-8` : type,
    'Content-Length': String(size),
    'Content-Disposition': contentDisposition(INLINE.has(type) ? 'inline' : 'attachment', name),
    'X-Content-Type-Options': 'nosniff',
    'Content-Security-Policy': "sandbox; default-src 'none'; img-src data:; media-src data:; style-src 'unsafe-inline'",
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Cache-Control': 'private, no-store',
  };
}

/** `Content-Disposition` with an ASCII fallback name and the exact name in RFC 5987 form. */
export function contentDisposition(kind: 'inline' | 'attachment', name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `${kind}; filename="${ascii}"; filename*=UTF-8''${rfc5987(name)}`;
}

function rfc5987(name: string): string {
  // Lone surrogates cannot be UTF-8: they become U+FFFD first (encodeURIComponent would throw).
  const wellFormed = name.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd');
  return encodeURIComponent(wellFormed).replace(/['()*!]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}
