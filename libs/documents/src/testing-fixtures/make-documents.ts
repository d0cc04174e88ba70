import { Readable } from 'node:stream';
import { Document, Packer, Paragraph } from 'docx';
import ExcelJS from 'exceljs';
import { PDFDocument, StandardFonts } from 'pdf-lib';
import { Worker } from 'node:worker_threads';
import yazl from 'yazl';

// Documents made by maintained writers, for the extraction tests.

/** A PDF with one page per entry, each line drawn as text. */
export async function makePdf(pages: string[][]): Promise<Buffer> {
  const doc = await PDFDocument.create();
  const font = await doc.embedFont(StandardFonts.Helvetica);
  for (const lines of pages) {
    const page = doc.addPage([595, 842]);
    lines.forEach((l, i) => page.drawText(l, { x: 50, y: 800 - i * 16, size: 11, font }));
  }
  return Buffer.from(await doc.save());
}

export async function makeDocx(paragraphs: string[]): Promise<Buffer> {
  const doc = new Document({ sections: [{ children: paragraphs.map((p) => new Paragraph(p)) }] });
  return Packer.toBuffer(doc);
}

export async function makeXlsx(sheets: Record<string, unknown[][]>): Promise<Buffer> {
  const wb = new ExcelJS.Workbook();
  for (const [name, rows] of Object.entries(sheets)) wb.addWorksheet(name).addRows(rows);
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** Written in a worker thread: pptxgenjs loads node built-ins by dynamic import, which Jest's module sandbox refuses. */
export async function makePptx(slides: string[][]): Promise<Buffer> {
  const source = `
const { parentPort, workerData } = require('node:worker_threads');
const PptxGenJS = require(workerData.lib);
const pptx = new PptxGenJS();
for (const lines of workerData.slides) pptx.addSlide().addText(lines.join('\\n'), { x: 0.5, y: 0.5, w: 9, h: 4 });
pptx.write({ outputType: 'nodebuffer' }).then((b) => parentPort.postMessage(b));
`;
  const worker = new Worker(source, { eval: true, workerData: { lib: require.resolve('pptxgenjs'), slides } });
  try {
    const bytes = await new Promise<Uint8Array>((resolve, reject) => {
      worker.once('message', resolve);
      worker.once('error', reject);
    });
    return Buffer.from(bytes);
  } finally {
    await worker.terminate();
  }
}

/**
 * A DOCX-shaped zip (about 2 MB) whose `word/document.xml` inflates to `inflatedBytes` (default
 * 2 GiB): the shape of a zip bomb. Written by yazl at the highest compression.
 */
export function makeZipBombDocx(inflatedBytes = 2 * 1024 ** 3): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  zip.addBuffer(
    Buffer.from(
      '<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">' +
        '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>',
    ),
    '[Content_Types].xml',
  );
  const chunk = Buffer.alloc(1024 * 1024, 'a');
  let left = inflatedBytes;
  const body = new Readable({
    read() {
      if (left <= 0) return void this.push(null);
      const n = Math.min(left, chunk.length);
      left -= n;
      this.push(chunk.subarray(0, n));
    },
  });
  zip.addReadStream(body, 'word/document.xml', { compressionLevel: 9 });
  zip.end();
  const parts: Buffer[] = [];
  return new Promise((resolve, reject) => {
    zip.outputStream.on('data', (c: Buffer) => parts.push(c));
    zip.outputStream.on('end', () => resolve(Buffer.concat(parts)));
    zip.outputStream.on('error', reject);
  });
}
