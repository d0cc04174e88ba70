import fc from 'fast-check';
import { DocumentExtractor, Extraction } from './document-extractor';
import { DocumentKind, documentKind } from './kinds';
import { makeDocx, makePdf, makePptx, makeXlsx, makeZipBombDocx } from './testing-fixtures/make-documents';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);
const extractor = new DocumentExtractor({ timeoutMs: 60_000, memoryMb: 512 });

/** The refusal's reason (fails when there is text). */
function reason(e: Extraction): string {
  if (e.ok) throw new Error('expected a refusal, got text');
  return e.reason;
}

function text(e: Extraction): string {
  if (!e.ok) throw new Error(`expected text, got the refusal: ${e.reason}`);
  return e.text;
}

describe('DocumentExtractor', () => {
  it('reads a PDF page by page, with page markers', async () => {
    const pdf = await makePdf([['Quarterly report', 'Revenue grew 12%'], ['Appendix A: methods']]);
    const e = await extractor.extract('pdf', pdf);
    expect(e).toMatchObject({ ok: true, units: 2, truncated: false });
    const t = text(e);
    expect(t).toMatch(
      /--- page 1 of 2 ---\nQuarterly report\s+Revenue grew 12%\n--- page 2 of 2 ---\nAppendix A: methods/,
    );
  });

  it('reads a DOCX as its paragraphs', async () => {
    const t = text(await extractor.extract('docx', await makeDocx(['Dear Ada,', 'The engine works.', 'Charles'])));
    expect(t.trim().split(/\n+/)).toEqual(['Dear Ada,', 'The engine works.', 'Charles']);
  });

  it('reads an XLSX sheet by sheet, row by row, with sheet markers', async () => {
    const xlsx = await makeXlsx({
      Sales: [
        ['Region', 'Total'],
        ['North', 1200],
        ['South', 830.5],
      ],
      Notes: [['checked']],
    });
    const e = await extractor.extract('xlsx', xlsx);
    expect(e).toMatchObject({ ok: true, units: 2 });
    expect(text(e)).toBe(
      '--- sheet 1 of 2: Sales ---\nrow 1: Region | Total\nrow 2: North | 1200\nrow 3: South | 830.5\n' +
        '--- sheet 2 of 2: Notes ---\nrow 1: checked\n',
    );
  });

  it('reads a CSV with quoted fields, row by row', async () => {
    const csv = Buffer.from('\uFEFFname,note\n"Smith, J.","said ""hi""\nand left"\nDoe,ok\n');
    expect(text(await extractor.extract('csv', csv))).toBe(
      'row 1: name | note\nrow 2: Smith, J. | said "hi" and left\nrow 3: Doe | ok\n',
    );
  });

  it('reads a PPTX slide by slide, with slide markers', async () => {
    const e = await extractor.extract('pptx', await makePptx([['Roadmap', 'Q1: beta'], ['Thanks!']]));
    expect(e).toMatchObject({ ok: true, units: 2 });
    expect(text(e)).toBe('--- slide 1 of 2 ---\nRoadmap\nQ1: beta\n--- slide 2 of 2 ---\nThanks!\n');
  });

  it('reads HTML as text, scripts and styles left out', async () => {
    const html = Buffer.from(
      '<html><head><style>p{color:red}</style><script>alert(1)</script></head>' +
        '<body><h1>Title</h1><p>Hello <b>world</b> &amp; all.</p><a href="https://example.org/x">docs</a></body></html>',
    );
    const t = text(await extractor.extract('html', html));
    expect(t).toContain('TITLE');
    expect(t).toContain('Hello world & all.');
    expect(t).toContain('docs [https://example.org/x]');
    expect(t).not.toMatch(/alert|color:red/);
  });

  it('says why a corrupt document cannot be read, for every kind', async () => {
    const junk = Buffer.from('%PDF-1.7 this is not really a document \x00\x01\x02'.repeat(20));
    for (const kind of ['pdf', 'docx', 'xlsx', 'pptx'] as const) {
      const e = await extractor.extract(kind, junk);
      expect(e.ok).toBe(false);
      if (!e.ok) expect(e.reason).toMatch(/not a (readable PDF|valid zip container)/);
    }
    // A truncated real document: its zip directory is gone.
    const docx = await makeDocx(['x']);
    const cut = await extractor.extract('docx', docx.subarray(0, docx.length >> 1));
    expect(reason(cut)).toMatch(/not a valid zip container/);
  });

  it('refuses a scanned PDF (no text layer) with the reason', async () => {
    const e = await extractor.extract('pdf', await makePdf([[], []]));
    expect(reason(e)).toMatch(/no text layer/);
  });

  it('stops a zip bomb shaped DOCX at the inflation bound, in bounded time and memory', async () => {
    const bomb = await makeZipBombDocx();
    expect(bomb.length).toBeLessThan(4 * 1024 * 1024);
    // The same bomb with a lying directory: document.xml declared as 1,000 bytes.
    const liar = Buffer.from(bomb);
    const central = liar.lastIndexOf(Buffer.from('PK\x01\x02', 'latin1'));
    expect(liar.toString('latin1', central + 46, central + 46 + 17)).toBe('word/document.xml');
    liar.writeUInt32LE(1000, central + 24);
    for (const [what, doc] of [
      ['honest', bomb],
      ['lying', liar],
    ] as const) {
      const rss = process.memoryUsage().rss;
      const t0 = performance.now();
      const e = await extractor.extract('docx', doc);
      const ms = performance.now() - t0;
      console.log(`zip bomb, ${what} sizes (${doc.length} bytes → 2 GiB): refused in ${Math.round(ms)} ms`);
      expect(reason(e)).toMatch(/unpack to more than 256 MiB/);
      expect(ms).toBeLessThan(10_000);
      expect(process.memoryUsage().rss - rss).toBeLessThan(512 * 1024 * 1024);
    }
  }, 120_000);

  it('reads a 500-page PDF within bounded time', async () => {
    const pages = Array.from({ length: 500 }, (_, i) =>
      Array.from({ length: 40 }, (_, l) => `Page ${i + 1} line ${l + 1}: the quick brown fox jumps`),
    );
    const pdf = await makePdf(pages);
    const t0 = performance.now();
    const e = await extractor.extract('pdf', pdf);
    const ms = performance.now() - t0;
    console.log(`500-page PDF (${pdf.length} bytes): extracted in ${Math.round(ms)} ms`);
    expect(e).toMatchObject({ ok: true, units: 500, truncated: false });
    const t = text(e);
    expect(t).toContain('--- page 500 of 500 ---\nPage 500 line 1: the quick brown fox jumps');
    expect(t.match(/^--- page \d+ of 500 ---$/gm)).toHaveLength(500);
    expect(ms).toBeLessThan(30_000);
  }, 120_000);

  it('stops an extraction at its time bound and at its output bound', async () => {
    const slow = new DocumentExtractor({ timeoutMs: 50 });
    const pdf = await makePdf(Array.from({ length: 200 }, () => ['x'.repeat(80)]));
    expect(reason(await slow.extract('pdf', pdf))).toMatch(/longer than 0.05 s/);
    const small = new DocumentExtractor({ maxChars: 1000 });
    const e = await small.extract('csv', Buffer.from('a,b\n'.repeat(10_000)));
    expect(e).toMatchObject({ ok: true, truncated: true });
    expect(text(e)).toHaveLength(1000);
  }, 60_000);

  it('answers every hostile byte string with text or a reason, never a crash', async () => {
    console.log(`hostile documents seed ${SEED} (replay: FC_SEED=${SEED})`);
    const docx = await makeDocx(['seed']);
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom<DocumentKind>('pdf', 'docx', 'xlsx', 'csv', 'pptx', 'html'),
        fc.oneof(
          fc.uint8Array({ maxLength: 2048 }),
          // A real DOCX with a few bytes flipped.
          fc
            .array(fc.tuple(fc.nat(docx.length - 1), fc.integer({ min: 0, max: 255 })), { maxLength: 8 })
            .map((flips) => {
              const b = Uint8Array.from(docx);
              for (const [i, v] of flips) b[i] = v;
              return b;
            }),
        ),
        async (kind, bytes) => {
          const e = await extractor.extract(kind, bytes);
          if (!e.ok) expect(e.reason.length).toBeGreaterThan(0);
          else expect(typeof e.text).toBe('string');
        },
      ),
      { seed: SEED, numRuns: 60 },
    );
  }, 120_000);

  it('knows a document by its extension', () => {
    expect(documentKind('/workspace/uploads/Report.PDF')).toBe('pdf');
    expect(documentKind('a.tar.gz')).toBeNull();
    expect(documentKind('dir.pdf/file')).toBeNull();
    expect(documentKind('page.htm')).toBe('html');
  });
});
