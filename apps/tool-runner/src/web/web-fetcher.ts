import { formatFetchHeader, parseWebUrl } from '@skald/contracts';
import { AddressPolicy, BlockedAddressError } from '@skald/service-kit';
import { ToolCancelled } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import { decodeBody, parseContentType } from './decode-body';
import { htmlToMarkdown } from './html-text';
import { pdfToText, PdfTextError } from './pdf-text';

/** The bounds of one `web_fetch` (`SKALD_WEB_FETCH_*`). */
export interface WebFetchLimits {
  /** Bytes of a body read (after decompression); a longer body is cut there (a PDF is refused). */
  maxBytes: number;
  /** The whole call — every redirect, the body, the conversion — in ms. */
  timeoutMs: number;
  /** Redirects followed within the URL's host. */
  maxRedirects: number;
  /** Characters of text returned when the call does not say (`max_chars`). */
  defaultChars: number;
  /** PDF pages read. */
  pdfMaxPages: number;
}

export const DEFAULT_WEB_FETCH_LIMITS: WebFetchLimits = {
  maxBytes: 5 * 1024 * 1024,
  timeoutMs: 30_000,
  maxRedirects: 5,
  defaultChars: 20_000,
  pdfMaxPages: 200,
};

const USER_AGENT = 'Skald-web_fetch/1.0 (an AI agent fetching a page a user asked for)';
const ACCEPT =
  'text/html, application/xhtml+xml, application/pdf, text/plain, text/markdown, application/json, */*;q=0.1';

/** Media types returned as the text they are. */
const TEXT_TYPES = new Set([
  'text/plain',
  'text/markdown',
  'text/csv',
  'application/json',
  'text/xml',
  'application/xml',
]);
const isText = (t: string): boolean => TEXT_TYPES.has(t) || /^application\/[\w.-]+\+(json|xml)$/.test(t);
const isHtml = (t: string): boolean => t === 'text/html' || t === 'application/xhtml+xml';

/**
 * `web_fetch`: one URL the gate allowed, fetched from the tool runner (never from a sandbox) through
 * the address guard of `@skald/service-kit` (the MCP HTTP client's: every connection, redirects
 * included, checks the address it is about to use, after DNS), bounded in redirects, bytes, time
 * and characters. Redirects are followed only within the URL's host — the one the approval rules
 * judged — and a redirect elsewhere is reported, not followed.
 */
export class WebFetcher {
  private readonly fetch: typeof fetch;

  constructor(
    policy: AddressPolicy,
    private readonly limits: WebFetchLimits,
  ) {
    this.fetch = policy.guardedFetch();
  }

  async fetchText(rawUrl: string, options: { maxChars?: number; signal: AbortSignal }): Promise<string> {
    const first = parseWebUrl(rawUrl);
    if (!first)
      throw new ToolError(
        'invalid_argument',
        `web_fetch: ${clip(rawUrl)} is no http(s) URL (or it carries a user name)`,
      );
    const deadline = AbortSignal.timeout(this.limits.timeoutMs);
    const signal = AbortSignal.any([options.signal, deadline]);
    const maxChars = options.maxChars ?? this.limits.defaultChars;
    try {
      return await this.run(first, maxChars, signal);
    } catch (e) {
      if (options.signal.aborted) throw new ToolCancelled();
      if (deadline.aborted)
        throw new ToolError('timed_out', `web_fetch: ${first.href} took longer than ${this.limits.timeoutMs / 1000} s`);
      throw this.explain(e, first);
    }
  }

  private async run(first: URL, maxChars: number, signal: AbortSignal): Promise<string> {
    let url = first;
    for (let hop = 0; ; hop += 1) {
      const res = await this.fetch(url, { signal, headers: { 'user-agent': USER_AGENT, accept: ACCEPT } });
      if (res.status >= 300 && res.status < 400 && res.headers.get('location') !== null) {
        await res.body?.cancel().catch(() => undefined);
        const next = parseWebUrl(new URL(res.headers.get('location') ?? '', url).href);
        if (!next)
          throw new ToolError('forbidden', `web_fetch: ${url.href} redirects to something that is no http(s) URL`);
        if (next.hostname !== first.hostname)
          return (
            `URL: ${url.href}\nRedirect: ${res.status} to another host, not followed: ${next.href}\n\n` +
            `The page moved to ${next.host}. web_fetch follows redirects only within ${first.host}; ` +
            `to read it, call web_fetch with ${next.href} (it is judged by its own domain).`
          );
        if (hop >= this.limits.maxRedirects)
          throw new ToolError(
            'too_large',
            `web_fetch: more than ${this.limits.maxRedirects} redirects from ${first.href}`,
          );
        url = next;
        continue;
      }
      return this.read(res, url, first, maxChars, signal);
    }
  }

  private async read(res: Response, url: URL, first: URL, maxChars: number, signal: AbortSignal): Promise<string> {
    const { mediaType, charset } = parseContentType(res.headers.get('content-type'));
    if (!res.ok) {
      await res.body?.cancel().catch(() => undefined);
      throw new ToolError('not_found', `web_fetch: ${url.href} answered ${res.status} ${res.statusText}`.trim());
    }
    const pdf = mediaType === 'application/pdf';
    if (!pdf && !isHtml(mediaType) && !isText(mediaType)) {
      await res.body?.cancel().catch(() => undefined);
      throw new ToolError(
        'binary',
        `web_fetch: ${url.href} is ${mediaType || 'of no stated type'}; web_fetch reads HTML, PDF, plain text, Markdown, CSV, JSON and XML only`,
      );
    }
    const body = await readBounded(res, this.limits.maxBytes);
    let title = '';
    let text: string;
    let cutNote = body.cut ? ` (the body was cut at ${this.limits.maxBytes} bytes)` : '';
    if (pdf) {
      if (body.cut)
        throw new ToolError(
          'too_large',
          `web_fetch: the PDF at ${url.href} is larger than ${this.limits.maxBytes} bytes`,
        );
      const out = await pdfToText(body.bytes, {
        maxPages: this.limits.pdfMaxPages,
        maxChars,
        timeoutMs: this.limits.timeoutMs,
        signal,
      });
      if (out.pagesRead < out.pages) cutNote = ` (${out.pagesRead} of ${out.pages} pages read)`;
      return this.compose(url, first, res, title, out.text, maxChars, cutNote, out.truncated);
    }
    const decoded = decodeBody(body.bytes, mediaType, charset);
    if (isHtml(mediaType)) {
      const page = htmlToMarkdown(decoded, url.href);
      title = page.title;
      text = page.markdown;
    } else text = decoded;
    return this.compose(url, first, res, title, text, maxChars, cutNote, body.cut);
  }

  private compose(
    url: URL,
    first: URL,
    res: Response,
    title: string,
    text: string,
    maxChars: number,
    cutNote: string,
    cut: boolean,
  ): string {
    const shown = text.slice(0, maxChars);
    // A source cut before conversion (bytes, pages) had more text than is known: no total then.
    const truncated =
      shown.length < text.length || cut ? { shown: shown.length, total: cut ? null : text.length } : null;
    const header = formatFetchHeader({
      url: url.href,
      title,
      contentType: res.headers.get('content-type') ?? '',
      truncated,
      ...(url.href !== first.href ? { redirectedFrom: first.href } : {}),
    });
    return `${header}${truncated && cutNote ? cutNote : ''}\n\n${shown}`;
  }

  private explain(e: unknown, url: URL): Error {
    if (e instanceof ToolError) return e;
    if (e instanceof PdfTextError) return new ToolError('binary', `web_fetch: ${url.href}: ${e.message}`);
    const cause = blockedCause(e);
    if (cause) return new ToolError('forbidden', `web_fetch: refused: ${cause.message}`);
    const why = e instanceof Error ? ((e.cause as Error | undefined)?.message ?? e.message) : String(e);
    return new ToolError('unavailable', `web_fetch: ${url.href} could not be fetched: ${why}`);
  }
}

/** The address guard's refusal inside a fetch error (undici wraps it as the cause). */
function blockedCause(e: unknown): BlockedAddressError | null {
  for (let c: unknown = e, depth = 0; c instanceof Error && depth < 5; c = c.cause, depth += 1)
    if (c instanceof BlockedAddressError || c.name === 'BlockedAddressError') return c as BlockedAddressError;
  return null;
}

/** A body read up to `maxBytes` (after decompression); the rest is not read. */
async function readBounded(res: Response, maxBytes: number): Promise<{ bytes: Uint8Array; cut: boolean }> {
  if (!res.body) return { bytes: new Uint8Array(0), cut: false };
  const reader = res.body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  let cut = false;
  for (;;) {
    const { done, value } = (await reader.read()) as { done: boolean; value?: Uint8Array };
    if (done || !value) break;
    const room = maxBytes - size;
    if (value.byteLength > room) {
      chunks.push(value.subarray(0, room));
      size += room;
      cut = true;
      await reader.cancel().catch(() => undefined);
      break;
    }
    chunks.push(value);
    size += value.byteLength;
  }
  const bytes = new Uint8Array(size);
  let at = 0;
  for (const c of chunks) {
    bytes.set(c, at);
    at += c.byteLength;
  }
  return { bytes, cut };
}

const clip = (s: string): string => (s.length > 200 ? `${s.slice(0, 200)}…` : s);
