import { Worker } from 'node:worker_threads';

/** What `pdfToText` reads of a PDF at most. */
export interface PdfLimits {
  /** Pages read; the rest are counted, not read. */
  maxPages: number;
  /** Characters of text kept. */
  maxChars: number;
  /** Time the extraction may take, in ms; past it the worker is terminated and an error thrown. */
  timeoutMs: number;
  /** Heap of the extracting worker, in MiB (default 256). */
  memoryMb?: number;
  signal?: AbortSignal;
}

export interface PdfText {
  /** The text, each page after a `--- page N ---` marker. */
  text: string;
  pages: number;
  pagesRead: number;
  /** Pages were left out or the text was cut at `maxChars`. */
  truncated: boolean;
}

export class PdfTextError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PdfTextError';
  }
}

/**
 * A PDF's text by unpdf (Mozilla's pdf.js, packaged for servers), page by page up to the limits,
 * in a worker thread of its own: the event loop never parses a PDF, and the time and heap bounds
 * hold even for a document built to make the parser spin (the worker is terminated). Encrypted,
 * corrupt or over-bound documents throw `PdfTextError` saying why. Its own module so that whatever
 * else reads PDFs shares it.
 */
export function pdfToText(bytes: Uint8Array, limits: PdfLimits): Promise<PdfText> {
  return new Promise<PdfText>((resolve, reject) => {
    if (limits.signal?.aborted) return reject(new PdfTextError('cancelled'));
    const worker = new Worker(WORKER_SOURCE, {
      eval: true,
      workerData: {
        unpdf: require.resolve('unpdf'),
        bytes,
        maxPages: limits.maxPages,
        maxChars: limits.maxChars,
      },
      resourceLimits: { maxOldGenerationSizeMb: limits.memoryMb ?? 256 },
    });
    let settled = false;
    const finish = (error: PdfTextError | null, value?: PdfText) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      limits.signal?.removeEventListener('abort', onAbort);
      void worker.terminate();
      if (error) reject(error);
      else resolve(value as PdfText);
    };
    const timer = setTimeout(
      () => finish(new PdfTextError(`reading the PDF took longer than ${limits.timeoutMs} ms`)),
      limits.timeoutMs,
    );
    const onAbort = () => finish(new PdfTextError('cancelled'));
    limits.signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('message', (m: { ok: true; value: PdfText } | { ok: false; error: string }) =>
      m.ok ? finish(null, m.value) : finish(new PdfTextError(m.error)),
    );
    worker.on('error', (e) =>
      finish(
        new PdfTextError(
          /ERR_WORKER_OUT_OF_MEMORY/.test(String((e as NodeJS.ErrnoException).code))
            ? `reading the PDF needed more than ${limits.memoryMb ?? 256} MiB`
            : `not a readable PDF (${e.message})`,
        ),
      ),
    );
    worker.on('exit', () => finish(new PdfTextError('the PDF reader stopped')));
  });
}

/** The worker: unpdf's document proxy, one page at a time, stopping at the page and character bounds. */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const { getDocumentProxy } = require(workerData.unpdf);
(async () => {
  let doc;
  try {
    doc = await getDocumentProxy(new Uint8Array(workerData.bytes), { isEvalSupported: false });
  } catch (e) {
    const why = e && e.message ? e.message : String(e);
    parentPort.postMessage({ ok: false, error: /password/i.test(why) ? 'the PDF is encrypted' : 'not a readable PDF (' + why + ')' });
    return;
  }
  try {
    const pages = doc.numPages;
    const last = Math.min(pages, workerData.maxPages);
    const parts = [];
    let chars = 0;
    for (let n = 1; n <= last && chars < workerData.maxChars; n += 1) {
      const page = await doc.getPage(n);
      const content = await page.getTextContent();
      const text = content.items.map((i) => (typeof i.str === 'string' ? i.str + (i.hasEOL ? '\\n' : '') : '')).join('').trim();
      const part = '--- page ' + n + ' ---\\n' + text;
      parts.push(part);
      chars += part.length + 2;
      page.cleanup();
    }
    const joined = parts.join('\\n\\n');
    parentPort.postMessage({
      ok: true,
      value: {
        text: joined.slice(0, workerData.maxChars),
        pages,
        pagesRead: parts.length,
        truncated: parts.length < pages || joined.length > workerData.maxChars,
      },
    });
  } catch (e) {
    parentPort.postMessage({ ok: false, error: 'the PDF could not be read (' + (e && e.message ? e.message : String(e)) + ')' });
  } finally {
    // unpdf's proxy has no destroy() in every version: the worker ends with the extraction anyway
    if (typeof doc.destroy === 'function') await doc.destroy().catch(() => {});
  }
})();
`;
