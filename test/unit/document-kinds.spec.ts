import { attachmentsBlock, TEXT_RENDITION_EXTENSIONS } from '@skald/agent-loop';
import { DOCUMENT_EXTENSIONS, documentKind } from '@skald/documents';

// The loop tells the model which attachments have a text rendition; the tool runner makes one for
// exactly the documents `@skald/documents` extracts. One table, held together here.
describe('document kinds', () => {
  it('the attachment block names a text rendition for exactly the extracted kinds', () => {
    expect([...TEXT_RENDITION_EXTENSIONS].sort()).toEqual(Object.keys(DOCUMENT_EXTENSIONS).sort());
    const names = [
      'a.pdf',
      'b.DOCX',
      'c.xlsx',
      'd.csv',
      'e.pptx',
      'f.html',
      'g.htm',
      'h.png',
      'i.txt',
      'j.pdf.zip',
      'pdf',
    ];
    for (const name of names) {
      const block = attachmentsBlock([{ path: `/workspace/uploads/${name}`, name }]);
      expect(block.includes('read_file on this path gives its extracted text')).toBe(documentKind(name) !== null);
    }
  });

  it('lists several attachments, each with its own note', () => {
    expect(
      attachmentsBlock([
        { path: '/workspace/uploads/report.pdf', name: 'report.pdf' },
        { path: '/workspace/uploads/x.png', name: 'x.png' },
      ]),
    ).toBe(
      '[SYSTEM INFO] The user attached files:\n' +
        '- /workspace/uploads/report.pdf (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)\n' +
        '- /workspace/uploads/x.png',
    );
  });
});
