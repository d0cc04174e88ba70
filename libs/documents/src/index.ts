export { aKind, DOCUMENT_EXTENSIONS, documentKind, KIND_NAMES, TEXT_KINDS } from './kinds';
export type { DocumentKind } from './kinds';
export { DEFAULT_EXTRACTOR_OPTIONS, DocumentExtractor } from './document-extractor';
export type { Extraction, ExtractorOptions } from './document-extractor';
