import { Worker } from 'node:worker_threads';
import { EXTRACT_WORKER_SOURCE } from './extract-worker.source';
import { aKind, DocumentKind } from './kinds';

/** Bounds of one extraction. */
export interface ExtractorOptions {
  /** Extractions running at once (each in a worker thread of its own); the rest wait their turn. */
  workers: number;
  /** Time of one extraction, waiting for a worker not included; past it the worker is terminated. */
  timeoutMs: number;
  /** Heap of one extraction's worker (old generation), in MiB; past it the worker is stopped. */
  memoryMb: number;
  /** Larger files are not extracted. */
  maxInputBytes: number;
  /** What a DOCX, XLSX or PPTX may unpack to, all parts together. */
  maxInflatedBytes: number;
  /** Characters of text kept; the rest is cut, and the text says so. */
  maxChars: number;
}

export const DEFAULT_EXTRACTOR_OPTIONS: ExtractorOptions = {
  workers: 2,
  timeoutMs: 60_000,
  memoryMb: 512,
  maxInputBytes: 50 * 1024 * 1024,
  maxInflatedBytes: 256 * 1024 * 1024,
  maxChars: 2_000_000,
};

/** Parts a zip-based document may hold; CSV rows read; extractions waiting for a worker. */
const MAX_ENTRIES = 10_000;
const MAX_WAITING = 64;
const MAX_ROWS = 1_000_000;

/**
 * What came of an extraction: the text (with `--- page/sheet/slide N of M ---` markers where the
 * format has them), or why there is none, as a clause the model reads ("it is encrypted").
 */
export type Extraction =
  | { ok: true; text: string; units: number | null; truncated: boolean }
  /** `transient`: not about the document (the reader busy, the call cancelled), worth trying again. */
  | { ok: false; reason: string; transient?: true };

/**
 * Extracts the text of documents off the event loop with maintained libraries (unpdf, mammoth,
 * exceljs, csv-parse, yauzl with fast-xml-parser, html-to-text): each document in a worker thread
 * of its own with a heap limit (`resourceLimits`) and a deadline after which the worker is
 * terminated; at most `workers` at once.
 */
export class DocumentExtractor {
  readonly options: ExtractorOptions;
  private running = 0;
  private readonly waiting: Array<() => void> = [];
  private readonly libs = {
    unpdf: require.resolve('unpdf'),
    mammoth: require.resolve('mammoth'),
    exceljs: require.resolve('exceljs'),
    csvParse: require.resolve('csv-parse/sync'),
    yauzl: require.resolve('yauzl'),
    fastXmlParser: require.resolve('fast-xml-parser'),
    htmlToText: require.resolve('html-to-text'),
  };

  constructor(options: Partial<ExtractorOptions> = {}) {
    this.options = { ...DEFAULT_EXTRACTOR_OPTIONS, ...options };
  }

  /** The text of `bytes` read as a `kind` document; `signal` stops it (the answer is then a refusal). */
  async extract(kind: DocumentKind, bytes: Uint8Array, signal?: AbortSignal): Promise<Extraction> {
    const tooLarge = this.sizeRefusal(bytes.byteLength);
    if (tooLarge) return tooLarge;
    if (this.running >= Math.max(1, this.options.workers) && this.waiting.length >= MAX_WAITING)
      return {
        ok: false,
        reason: 'the document reader is busy with other documents; try again shortly',
        transient: true,
      };
    await this.slot(signal);
    try {
      if (signal?.aborted) return { ok: false, reason: 'the extraction was cancelled', transient: true };
      return await this.run(kind, bytes, signal);
    } finally {
      this.running--;
      this.waiting.shift()?.();
    }
  }

  /** The answer for a file of `size` bytes when it is too large to extract (no need to read it). */
  sizeRefusal(size: number): Extraction | null {
    if (size <= this.options.maxInputBytes) return null;
    return { ok: false, reason: `it is larger than ${mib(this.options.maxInputBytes)}, the limit for text extraction` };
  }

  private slot(signal?: AbortSignal): Promise<void> {
    if (this.running < Math.max(1, this.options.workers)) {
      this.running++;
      return Promise.resolve();
    }
    return new Promise((resolve) => {
      const go = (): void => {
        signal?.removeEventListener('abort', cancel);
        this.running++;
        resolve();
      };
      // A cancelled wait takes no worker: it leaves the queue and answers at once.
      const cancel = (): void => {
        const i = this.waiting.indexOf(go);
        if (i !== -1) this.waiting.splice(i, 1);
        this.running++;
        resolve();
      };
      signal?.addEventListener('abort', cancel, { once: true });
      this.waiting.push(go);
    });
  }

  private run(kind: DocumentKind, bytes: Uint8Array, signal?: AbortSignal): Promise<Extraction> {
    const o = this.options;
    const copy = new Uint8Array(bytes);
    return new Promise((resolve) => {
      const worker = new Worker(EXTRACT_WORKER_SOURCE, {
        eval: true,
        workerData: {
          libs: this.libs,
          limits: {
            maxInflatedBytes: o.maxInflatedBytes,
            maxEntries: MAX_ENTRIES,
            maxChars: o.maxChars,
            maxRows: MAX_ROWS,
            maxInputChars: o.maxInputBytes,
          },
        },
        resourceLimits: { maxOldGenerationSizeMb: o.memoryMb, maxYoungGenerationSizeMb: 32 },
      });
      let settled = false;
      const finish = (answer: Extraction): void => {
        if (settled) return;
        settled = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', onAbort);
        void worker.terminate();
        resolve(answer);
      };
      const onAbort = (): void => finish({ ok: false, reason: 'the extraction was cancelled', transient: true });
      const timer = setTimeout(
        () =>
          finish({
            ok: false,
            reason: `reading its text took longer than ${o.timeoutMs / 1000} s, the limit for text extraction, and was stopped`,
          }),
        o.timeoutMs,
      );
      signal?.addEventListener('abort', onAbort, { once: true });
      worker.on('message', (m: Extraction) => finish(m));
      worker.on('error', (e: Error & { code?: string }) =>
        finish({
          ok: false,
          reason:
            e.code === 'ERR_WORKER_OUT_OF_MEMORY'
              ? `reading its text needed more than ${o.memoryMb} MiB, the limit for text extraction, and was stopped`
              : `reading it as ${aKind(kind)} failed (${e.message.slice(0, 300)})`,
        }),
      );
      worker.on('exit', () => finish({ ok: false, reason: `reading it as ${aKind(kind)} stopped unexpectedly` }));
      worker.postMessage({ kind, bytes: copy }, [copy.buffer]);
    });
  }
}

function mib(n: number): string {
  return `${Math.round((n / (1024 * 1024)) * 10) / 10} MiB`;
}
