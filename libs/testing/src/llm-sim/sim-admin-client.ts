import type { SimLatency, SimReplySpec, SimRequestLogEntry, SimRequestQuery, SimScriptInfo } from './sim-types';

/** A script as the admin HTTP API takes it: JSON replies only (no reply functions). */
export interface SimRemoteScriptInput {
  match?: string;
  matchIn?: 'any' | 'last_user';
  model?: string;
  replies: SimReplySpec[];
  repeatLast?: boolean;
}

export class LlmSimAdminError extends Error {
  readonly code = 'llm_sim_admin_error';
  constructor(
    message: string,
    readonly status: number,
  ) {
    super(message);
    this.name = 'LlmSimAdminError';
  }
}

/**
 * Scripts and inspects an llm-sim running in another process, through its `/_sim/` admin API.
 * `adminUrl` is the server root (`http://127.0.0.1:4010`); a base URL ending in `/v1` is accepted too.
 */
export class LlmSimAdminClient {
  readonly adminUrl: string;

  constructor(adminUrl: string) {
    this.adminUrl = adminUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
  }

  async script(input: SimRemoteScriptInput): Promise<string> {
    const { ids } = await this.call<{ ids: string[] }>('POST', '/_sim/scripts', input);
    return ids[0];
  }

  async scripts(): Promise<SimScriptInfo[]> {
    return (await this.call<{ scripts: SimScriptInfo[] }>('GET', '/_sim/scripts')).scripts;
  }

  async unscript(id: string): Promise<boolean> {
    try {
      await this.call('DELETE', `/_sim/scripts/${encodeURIComponent(id)}`);
      return true;
    } catch (err) {
      if (err instanceof LlmSimAdminError && err.status === 404) return false;
      throw err;
    }
  }

  async requests(query: SimRequestQuery = {}): Promise<SimRequestLogEntry[]> {
    const params = new URLSearchParams();
    if (query.contains !== undefined) params.set('contains', query.contains);
    if (query.sinceId !== undefined) params.set('since', String(query.sinceId));
    const suffix = params.size > 0 ? `?${params.toString()}` : '';
    return (await this.call<{ requests: SimRequestLogEntry[] }>('GET', `/_sim/requests${suffix}`)).requests;
  }

  /** Polls the request log until an entry satisfies the predicate. */
  async waitForRequest(
    predicate: (entry: SimRequestLogEntry) => boolean,
    options: { timeoutMs?: number; intervalMs?: number; query?: SimRequestQuery } = {},
  ): Promise<SimRequestLogEntry> {
    const deadline = Date.now() + (options.timeoutMs ?? 5000);
    for (;;) {
      const found = (await this.requests(options.query)).find(predicate);
      if (found) return found;
      if (Date.now() >= deadline)
        throw new Error(`llm-sim: no logged request matched within ${options.timeoutMs ?? 5000} ms`);
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 50));
    }
  }

  async setLatency(latency: SimLatency): Promise<void> {
    await this.call('PUT', '/_sim/config', { latency });
  }

  async reset(): Promise<void> {
    await this.call('POST', '/_sim/reset');
  }

  async health(): Promise<boolean> {
    try {
      await this.call('GET', '/_sim/health');
      return true;
    } catch {
      return false;
    }
  }

  private async call<T = unknown>(method: string, path: string, body?: unknown): Promise<T> {
    const response = await fetch(`${this.adminUrl}${path}`, {
      method,
      headers: body === undefined ? {} : { 'content-type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    if (!response.ok) {
      let message = text;
      try {
        message = (JSON.parse(text) as { error?: { message?: string } }).error?.message ?? text;
      } catch {
        // not JSON: keep the raw text
      }
      throw new LlmSimAdminError(
        `llm-sim admin ${method} ${path} failed with ${response.status}: ${message}`,
        response.status,
      );
    }
    return (text === '' ? undefined : JSON.parse(text)) as T;
  }
}
