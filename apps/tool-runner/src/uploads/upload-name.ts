/** Longest stored name in UTF-8 bytes (most file systems allow 255; room is left for ` (n)`). */
export const UPLOAD_NAME_MAX_BYTES = 200;

/** Names Windows reserves whatever the extension: a workspace may be synced or zipped to one. */
const RESERVED = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³]|conin\$|conout\$)$/i;
/** What a stored name may hold: letters and digits of any script, and a few quiet punctuation marks. */
const UNSAFE = /[^\p{L}\p{M}\p{N} ._\-+,()@[\]~]/gu;

/**
 * The file name an upload is stored under in `uploads/`: one path segment, never `.`/`..` or hidden
 * (no leading dot), never an option (no leading `-`), no control or path characters, no Windows
 * reserved device name, NFC, at most `UPLOAD_NAME_MAX_BYTES` bytes with its extension kept.
 * Idempotent: a sanitised name sanitises to itself.
 */
export function sanitizeUploadName(raw: string): string {
  const base = raw.replace(/\\/g, '/').split('/').pop() ?? '';
  let name = base
    .normalize('NFC')
    .replace(UNSAFE, '_')
    .replace(/\s+/g, ' ')
    .replace(/^[\s.\-_]+/, '')
    .replace(/[\s.]+$/, '');
  // Windows reads the part before the first dot as the device name (`nul.tar.gz`, `LPT1..x`).
  if (RESERVED.test(name.split('.')[0].trim())) name = `file_${name}`;
  name = truncateKeepingExtension(name, UPLOAD_NAME_MAX_BYTES)
    .replace(/[\s.]+$/, '')
    .normalize('NFC');
  return name === '' || /^[_.\s]*$/.test(name) ? 'upload' : name;
}

/** The names tried in turn when `name` is taken: `a.txt`, `a (1).txt`, … (bounded). */
export function candidateNames(name: string, max: number): string[] {
  const dot = name.lastIndexOf('.');
  const [stem, ext] = dot > 0 ? [name.slice(0, dot), name.slice(dot)] : [name, ''];
  const out = [name];
  for (let i = 1; i < max; i++) out.push(`${stem} (${i})${ext}`);
  return out;
}

function truncateKeepingExtension(name: string, maxBytes: number): string {
  if (Buffer.byteLength(name, 'utf8') <= maxBytes) return name;
  const dot = name.lastIndexOf('.');
  let ext = dot > 0 ? name.slice(dot) : '';
  if (Buffer.byteLength(ext, 'utf8') > 16) ext = '';
  const stem = ext ? name.slice(0, dot) : name;
  return `${cutToBytes(stem, maxBytes - Buffer.byteLength(ext, 'utf8'))}${ext}`;
}

/** The longest prefix of whole code points within `maxBytes` (a combining mark never ends up orphaned first). */
function cutToBytes(s: string, maxBytes: number): string {
  let out = '';
  let bytes = 0;
  for (const ch of s) {
    const n = Buffer.byteLength(ch, 'utf8');
    if (bytes + n > maxBytes) break;
    out += ch;
    bytes += n;
  }
  return out;
}
