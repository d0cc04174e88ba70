/**
 * The documents Skald reads as text: each by the extension of its name. This table is the one place
 * that says which files get a text rendition; the loop's attachment block agrees with it
 * (`kinds.spec.ts`).
 */
export type DocumentKind = 'pdf' | 'docx' | 'xlsx' | 'csv' | 'pptx' | 'html';

export const DOCUMENT_EXTENSIONS: Readonly<Record<string, DocumentKind>> = {
  '.pdf': 'pdf',
  '.docx': 'docx',
  '.xlsx': 'xlsx',
  '.csv': 'csv',
  '.pptx': 'pptx',
  '.html': 'html',
  '.htm': 'html',
};

/**
 * Kinds that are text already (a table, a page): `read_file` reads an uploaded one as its
 * rendition, and any other (a page or a table the agent writes and edits) as its source.
 */
export const TEXT_KINDS: ReadonlySet<DocumentKind> = new Set<DocumentKind>(['csv', 'html']);

/** What a document is called in a sentence the model reads. */
export const KIND_NAMES: Readonly<Record<DocumentKind, string>> = {
  pdf: 'PDF',
  docx: 'Word document',
  xlsx: 'Excel workbook',
  csv: 'CSV file',
  pptx: 'PowerPoint presentation',
  html: 'HTML page',
};

/** The kind of a file by its name, or null for a file that is not a document Skald extracts. */
export function documentKind(name: string): DocumentKind | null {
  const dot = name.lastIndexOf('.');
  if (dot <= name.lastIndexOf('/')) return null;
  return DOCUMENT_EXTENSIONS[name.slice(dot).toLowerCase()] ?? null;
}

/** The kind's name with its indefinite article ("an HTML page"). */
export function aKind(kind: DocumentKind): string {
  return `${kind === 'html' || kind === 'xlsx' ? 'an' : 'a'} ${KIND_NAMES[kind]}`;
}
