import { Inject, Injectable } from '@nestjs/common';
import { formatSearchResult } from '@skald/contracts';
import { AddressPolicy } from '@skald/service-kit';
import { TOOL_RUNNER_CONFIG, type ToolRunnerConfig } from '../config';
import { ToolCancelled, type ToolContext, type ToolOutput } from '../exec/tool-context';
import { ToolError } from '../tool-error';
import type { SearchBackend } from './search/search-backend';
import { searchBackend } from './search/search-backends';
import { WebFetcher } from './web-fetcher';

/** Bytes of a search backend's answer read at most. */
const SEARCH_MAX_BYTES = 2 * 1024 * 1024;

/** The sentence of a `web_search` call on a deployment without a search backend. */
export const NO_SEARCH_BACKEND =
  'web_search is not available: this deployment has no search backend (SKALD_WEB_SEARCH_BACKEND)';

/**
 * `web_fetch` and `web_search`, run here in the tool runner (never inside a command's sandbox),
 * after the approval gate allowed them like any tool.
 */
@Injectable()
export class WebToolsService {
  private readonly fetcher: WebFetcher;
  private readonly backend: SearchBackend | null;
  private readonly timeoutMs: number;

  constructor(@Inject(TOOL_RUNNER_CONFIG) config: ToolRunnerConfig) {
    this.timeoutMs = config.SKALD_WEB_FETCH_TIMEOUT_MS;
    this.fetcher = new WebFetcher(new AddressPolicy(config.SKALD_WEB_ALLOW_HOSTS, 'SKALD_WEB_ALLOW_HOSTS'), {
      maxBytes: config.SKALD_WEB_FETCH_MAX_BYTES,
      timeoutMs: config.SKALD_WEB_FETCH_TIMEOUT_MS,
      maxRedirects: config.SKALD_WEB_FETCH_MAX_REDIRECTS,
      defaultChars: config.SKALD_WEB_FETCH_CHARS,
      pdfMaxPages: config.SKALD_WEB_PDF_MAX_PAGES,
    });
    // The operator's own endpoint (a SearXNG on the cluster's network is usual): not the tenant's
    // choice, so not behind the address guard; redirects are refused all the same.
    const operatorFetch: typeof fetch = (input, init) => fetch(input, { ...init, redirect: 'error' });
    this.backend = searchBackend(config.SKALD_WEB_SEARCH_BACKEND, {
      url: config.SKALD_WEB_SEARCH_URL,
      apiKey: config.SKALD_WEB_SEARCH_API_KEY,
      maxBytes: SEARCH_MAX_BYTES,
      fetch: operatorFetch,
    });
  }

  /** Whether `web_search` is offered: a backend is configured. */
  get searchOffered(): boolean {
    return this.backend !== null;
  }

  async fetch(ctx: ToolContext, args: { url: string; max_chars?: number }): Promise<ToolOutput> {
    return { result: await this.fetcher.fetchText(args.url, { maxChars: args.max_chars, signal: ctx.signal }) };
  }

  async search(ctx: ToolContext, args: { query: string; count: number }): Promise<ToolOutput> {
    const backend = this.backend;
    if (!backend) throw new ToolError('unavailable', NO_SEARCH_BACKEND);
    const deadline = AbortSignal.timeout(this.timeoutMs);
    try {
      const hits = await backend.search(args.query, args.count, AbortSignal.any([ctx.signal, deadline]));
      return { result: formatSearchResult(args.query, backend.name, hits) };
    } catch (e) {
      if (ctx.signal.aborted) throw new ToolCancelled();
      if (deadline.aborted)
        throw new ToolError(
          'timed_out',
          `web_search: the ${backend.name} backend took longer than ${this.timeoutMs / 1000} s`,
        );
      // The backend's words only: never the request (its key) nor a stack.
      const why =
        e instanceof Error && e.name === 'SearchBackendError'
          ? e.message
          : `the ${backend.name} search backend could not be reached`;
      throw new ToolError('unavailable', `web_search: ${why}`);
    }
  }
}
