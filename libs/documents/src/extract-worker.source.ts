/**
 * The extraction worker (run with `eval`, like the tool runner's pattern workers, so it needs no
 * build step and the same source runs under Jest): one document per worker, the libraries loaded by
 * the paths the parent resolved. It answers `{ ok: true, text, units, truncated }` or
 * `{ ok: false, reason }` with a sentence for the model; a crash, an out-of-memory or an overrun is
 * the parent's to name (it terminates the worker).
 *
 * Zip-based formats (DOCX, XLSX, PPTX) are unpacked first with yauzl, entry by entry, counting what
 * each entry really inflates to (`validateEntrySizes`: an entry that inflates past its declared size
 * fails): more entries than `maxEntries` or more than `maxInflatedBytes` in all and the document is
 * refused before any library builds it in memory.
 */
export const EXTRACT_WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { libs, limits } = workerData;

class Refusal extends Error {}

function mib(n) {
  return (n / 1048576).toFixed(n < 10485760 ? 1 : 0).replace(/\\.0$/, '') + ' MiB';
}

/** Collects the text up to maxChars; past it, the rest is dropped and the text says so. */
class Out {
  constructor(max) { this.parts = []; this.chars = 0; this.max = max; this.truncated = false; }
  add(s) {
    if (this.truncated) return false;
    if (this.chars + s.length > this.max) {
      this.parts.push(s.slice(0, this.max - this.chars));
      this.chars = this.max;
      this.truncated = true;
      return false;
    }
    this.parts.push(s);
    this.chars += s.length;
    return true;
  }
  line(s) { return this.add(s + '\\n'); }
  text() { return this.parts.join(''); }
}

/** Unpacks a zip within the bounds: the entries whose names \`keep\` accepts, as Buffers. */
function unzip(buf, keep) {
  const yauzl = require(libs.yauzl);
  return new Promise((resolve, reject) => {
    yauzl.fromBuffer(buf, { lazyEntries: true, validateEntrySizes: true, strictFileNames: false, decodeStrings: true }, (err, zip) => {
      if (err) return reject(new Refusal('it is not a valid zip container (' + err.message + ')'));
      const kept = new Map();
      let entries = 0;
      let declared = 0;
      let inflated = 0;
      let done = false;
      const fail = (e) => { if (done) return; done = true; zip.close(); reject(e); };
      const tooBig = () => new Refusal('its contents unpack to more than ' + mib(limits.maxInflatedBytes) + ', the limit for text extraction');
      zip.on('error', (e) => fail(new Refusal('it is not a valid zip container (' + e.message + ')')));
      zip.on('end', () => { if (!done) { done = true; resolve(kept); } });
      zip.on('entry', (entry) => {
        if (++entries > limits.maxEntries) return fail(new Refusal('it holds more than ' + limits.maxEntries + ' parts, the limit for text extraction'));
        if (/\\/$/.test(entry.fileName)) return zip.readEntry();
        if ((entry.generalPurposeBitFlag & 1) !== 0) return fail(new Refusal('it is encrypted (password-protected)'));
        declared += entry.uncompressedSize;
        if (declared > limits.maxInflatedBytes) return fail(tooBig());
        zip.openReadStream(entry, (e, stream) => {
          if (e) return fail(new Refusal('it is not a valid zip container (' + e.message + ')'));
          const want = keep(entry.fileName);
          const chunks = [];
          stream.on('data', (c) => {
            inflated += c.length;
            if (inflated > limits.maxInflatedBytes) { stream.destroy(); return fail(tooBig()); }
            if (want) chunks.push(c);
          });
          stream.on('error', (se) => fail(/too many bytes|too few bytes/.test(se.message) ? tooBig() : new Refusal('a part of it is damaged (' + se.message + ')')));
          stream.on('end', () => {
            if (done) return;
            if (want) kept.set(entry.fileName, Buffer.concat(chunks));
            zip.readEntry();
          });
        });
      });
      zip.readEntry();
    });
  });
}

async function pdf(buf, out) {
  const { getDocumentProxy } = await import(libs.unpdf);
  let doc;
  try {
    doc = await getDocumentProxy(new Uint8Array(buf.buffer, buf.byteOffset, buf.byteLength), { isEvalSupported: false, verbosity: 0 });
  } catch (e) {
    if (e && e.name === 'PasswordException') throw new Refusal('the PDF is password-protected');
    throw new Refusal('it is not a readable PDF (' + ((e && e.message) || e) + ')');
  }
  const total = doc.numPages;
  let empty = 0;
  for (let i = 1; i <= total; i++) {
    const page = await doc.getPage(i);
    const content = await page.getTextContent();
    let text = '';
    for (const item of content.items) {
      if (typeof item.str !== 'string') continue;
      text += item.str;
      if (item.hasEOL) text += '\\n';
    }
    page.cleanup();
    if (text.trim() === '') empty++;
    if (!out.line('--- page ' + i + ' of ' + total + ' ---') || !out.line(text.replace(/\\s+$/, ''))) break;
  }
  if (total > 0 && empty === total)
    throw new Refusal('its ' + total + ' page' + (total === 1 ? ' has' : 's have') + ' no text layer (a scan or images); text recognition (OCR) is not available');
  return total;
}

async function docx(buf, out) {
  await unzip(buf, () => false);
  const mammoth = require(libs.mammoth);
  const { value } = await mammoth.extractRawText({ buffer: buf });
  out.add(value.replace(/\\n{3,}/g, '\\n\\n'));
  return null;
}

function cellText(v) {
  if (v === null || v === undefined) return '';
  if (v instanceof Date) return isNaN(v.getTime()) ? '' : v.toISOString().replace('T00:00:00.000Z', '');
  if (typeof v !== 'object') return String(v);
  if (Array.isArray(v.richText)) return v.richText.map((r) => r.text).join('');
  if ('result' in v) return cellText(v.result);
  if ('formula' in v || 'sharedFormula' in v) return '';
  if ('text' in v) return cellText(v.text);
  if ('error' in v) return String(v.error);
  return '';
}

function row(n, cells, out) {
  let last = cells.length;
  while (last > 0 && cells[last - 1] === '') last--;
  if (last === 0) return true;
  return out.line('row ' + n + ': ' + cells.slice(0, last).map((c) => c.replace(/\\r?\\n/g, ' ')).join(' | '));
}

async function xlsx(buf, out) {
  await unzip(buf, () => false);
  const ExcelJS = require(libs.exceljs);
  const wb = new ExcelJS.Workbook();
  try {
    await wb.xlsx.load(buf);
  } catch (e) {
    throw new Refusal('it is not a readable Excel workbook (' + ((e && e.message) || e) + ')');
  }
  const sheets = wb.worksheets;
  for (let s = 0; s < sheets.length; s++) {
    const ws = sheets[s];
    if (!out.line('--- sheet ' + (s + 1) + ' of ' + sheets.length + ': ' + ws.name + ' ---')) break;
    let full = false;
    ws.eachRow({ includeEmpty: false }, (r, n) => {
      if (full) return;
      const cells = [];
      for (let c = 1; c <= r.cellCount; c++) cells.push(cellText(r.getCell(c).value));
      if (!row(n, cells, out)) full = true;
    });
    if (full) break;
  }
  return sheets.length;
}

async function csv(buf, out) {
  const { parse } = require(libs.csvParse);
  let records;
  try {
    records = parse(buf, { bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, max_record_size: 1048576, to_line: limits.maxRows });
  } catch (e) {
    throw new Refusal('it is not a readable CSV file (' + ((e && e.message) || e) + ')');
  }
  for (let i = 0; i < records.length; i++) if (!row(i + 1, records[i], out)) break;
  return null;
}

function paragraphs(node, into) {
  if (node === null || typeof node !== 'object') return;
  for (const [k, v] of Object.entries(node)) {
    const list = Array.isArray(v) ? v : [v];
    if (k === 'p') for (const p of list) into.push(runs(p));
    else for (const child of list) paragraphs(child, into);
  }
}

function runs(node) {
  if (node === null || typeof node !== 'object') return '';
  let s = '';
  for (const [k, v] of Object.entries(node)) {
    const list = Array.isArray(v) ? v : [v];
    for (const child of list) {
      if (k === 't') s += typeof child === 'object' ? (child['#text'] ?? '') : String(child);
      else if (k === 'br') s += ' ';
      else s += runs(child);
    }
  }
  return s;
}

async function pptx(buf, out) {
  const slideName = /^ppt\\/slides\\/slide(\\d+)\\.xml$/;
  const parts = await unzip(buf, (name) => slideName.test(name));
  const { XMLParser } = require(libs.fastXmlParser);
  const parser = new XMLParser({ ignoreAttributes: true, removeNSPrefix: true, parseTagValue: false, trimValues: false, processEntities: true });
  const slides = [...parts.keys()].sort((a, b) => Number(slideName.exec(a)[1]) - Number(slideName.exec(b)[1]));
  if (slides.length === 0) throw new Refusal('it holds no slides (not a PowerPoint presentation?)');
  for (let i = 0; i < slides.length; i++) {
    let doc;
    try {
      doc = parser.parse(parts.get(slides[i]).toString('utf8'));
    } catch (e) {
      throw new Refusal('slide ' + (i + 1) + ' is damaged (' + ((e && e.message) || e) + ')');
    }
    const paras = [];
    paragraphs(doc, paras);
    const text = paras.map((p) => p.trim()).filter((p) => p !== '').join('\\n');
    if (!out.line('--- slide ' + (i + 1) + ' of ' + slides.length + ' ---') || !out.line(text)) break;
  }
  return slides.length;
}

async function html(buf, out) {
  const { convert } = require(libs.htmlToText);
  const text = convert(new TextDecoder('utf-8').decode(buf), {
    wordwrap: false,
    limits: { maxInputLength: limits.maxInputChars, maxDepth: 256, maxChildNodes: 100000, ellipsis: '…' },
    selectors: [
      { selector: 'img', format: 'skip' },
      { selector: 'a', options: { hideLinkHrefIfSameAsText: true, ignoreHref: false } },
    ],
  });
  out.add(text);
  return null;
}

const EXTRACT = { pdf, docx, xlsx, csv, pptx, html };

parentPort.once('message', async ({ kind, bytes }) => {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out = new Out(limits.maxChars);
  try {
    const units = await EXTRACT[kind](buf, out);
    parentPort.postMessage({ ok: true, text: out.text(), units, truncated: out.truncated });
  } catch (e) {
    if (e instanceof Refusal) parentPort.postMessage({ ok: false, reason: e.message });
    else parentPort.postMessage({ ok: false, reason: 'it could not be read (' + String((e && e.message) || e).slice(0, 300) + ')' });
  }
});
`;
