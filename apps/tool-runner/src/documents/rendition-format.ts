import type { DocumentKind, Extraction } from '@skald/documents';
import { KIND_NAMES } from '@skald/documents';

// The stored text rendition of a document: one header line (what it was extracted from, and when that
// file was last changed), then the text the model reads, or nothing and why.

const MAGIC = '#skald-text-rendition ';

/** The identity of a file's content as the file system states it: any write, rename or replacement changes it. */
export interface FileStamp {
  ino: bigint;
  size: bigint;
  mtimeNs: bigint;
  ctimeNs: bigint;
}

export function stampOf(s: FileStamp): string {
  return `${s.ino}:${s.size}:${s.mtimeNs}:${s.ctimeNs}`;
}

/** What the model reads of a document: a first line naming it, its text, and a note where the text was cut. */
export type Rendition = { ok: true; text: string } | { ok: false; reason: string };

export function renditionOf(virtual: string, kind: DocumentKind, e: Extraction): Rendition {
  if (!e.ok) return e;
  const units = e.units === null ? '' : `, ${e.units} ${UNIT[kind]}${e.units === 1 ? '' : 's'}`;
  const head = `[text of the ${KIND_NAMES[kind]} ${virtual}${units}, extracted by Skald; the file itself is binary]\n`;
  const tail = e.truncated ? `\n[text cut here: the rest of the document is longer than the extraction limit]\n` : '';
  return { ok: true, text: head + e.text + tail };
}

const UNIT: Record<DocumentKind, string> = {
  pdf: 'page',
  xlsx: 'sheet',
  pptx: 'slide',
  docx: 'part',
  csv: 'row',
  html: 'page',
};

export function serialize(stamp: string, r: Rendition): string {
  const header = JSON.stringify(r.ok ? { stamp } : { stamp, failed: r.reason });
  return `${MAGIC}${header}\n${r.ok ? r.text : ''}`;
}

/** The rendition stored for `stamp`, or null when there is none or it was made from other content. */
export function parse(stored: string, stamp: string): Rendition | null {
  if (!stored.startsWith(MAGIC)) return null;
  const nl = stored.indexOf('\n');
  if (nl === -1) return null;
  let header: unknown;
  try {
    header = JSON.parse(stored.slice(MAGIC.length, nl));
  } catch {
    return null;
  }
  if (typeof header !== 'object' || header === null || (header as { stamp?: unknown }).stamp !== stamp) return null;
  const failed = (header as { failed?: unknown }).failed;
  if (typeof failed === 'string') return { ok: false, reason: failed };
  return { ok: true, text: stored.slice(nl + 1) };
}
