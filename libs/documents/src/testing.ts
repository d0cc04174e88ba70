// Documents made by maintained writers, for tests of the extraction and of what reads it (not part of the build).
export { makeDocx, makePdf, makePptx, makeXlsx } from './testing-fixtures/make-documents';
