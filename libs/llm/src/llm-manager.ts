import OpenAI from 'openai';
import type { LlmClientDefinition, LlmPricing } from './llm-client-config';
import { LlmCallError } from './llm-call.error';
import { LlmConfigError } from './llm-config.error';
import { loadLlmConfigFromEnv } from './llm-config-from-env';
import { InMemoryLlmHealthStore, type LlmHealth, type LlmHealthStore } from './llm-health';
import {
  selectLlmClient,
  type LlmClientDescriptor,
  type LlmSelectReason,
  type LlmSelectRequest,
} from './llm-selection';
import { createLlmHttpFetch } from './llm-http-fetch';
import { inChatSpan } from './llm-span';
import { streamChat } from './llm-stream-chat';
import type { LlmChatRequest, LlmChatResult } from './llm-wire.types';

export interface LlmClientStatus extends LlmClientDescriptor {
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  lastError: string | null;
  /** USD per million tokens; null when not configured. */
  pricing: LlmPricing | null;
}

export type LlmSelectedClient = LlmClientDescriptor & { reason: LlmSelectReason };

export interface LlmManagerOptions {
  health?: LlmHealthStore;
}

/**
 * The fetch options the SDK passes on every call. The manager's own fetch ({@link createLlmHttpFetch})
 * never follows a redirect; these apply where it hands a request to global fetch (Node's undici).
 * `redirect: 'error'` with
 * `window: null` is the one case in which fetch sends the request as built instead of cloning it
 * first (a clone tees the body into two web streams, so that a 307/308 could be re-sent): a model
 * endpoint does not redirect a POST, and one that does is a misconfigured base URL, now a
 * connection error naming it rather than a second request. Measured by scripts/bench/llm-call.js.
 */
export const LLM_FETCH_OPTIONS = { redirect: 'error', window: null } as const;

/** Margin given to the SDK's own timeout, so that ours (which knows why it fired) fires first. */
const SDK_TIMEOUT_MARGIN_MS = 5000;

/**
 * The configured LLM clients: which one to call next ({@link select}) and one streaming call to it
 * ({@link streamChat}), with health kept from the outcomes. It never retries or falls back by
 * itself: the agent loop does, asking `select` again with the clients it already tried.
 */
export class LlmManager {
  private readonly definitions: ReadonlyMap<string, LlmClientDefinition>;
  private readonly sdkClients = new Map<string, OpenAI>();
  private readonly health: LlmHealthStore;
  /** One keep-alive HTTP agent for every client's calls (see {@link createLlmHttpFetch}). */
  private readonly fetch = createLlmHttpFetch();

  constructor(clients: readonly LlmClientDefinition[], options: LlmManagerOptions = {}) {
    const definitions = new Map<string, LlmClientDefinition>();
    for (const client of clients) {
      if (definitions.has(client.name)) throw new LlmConfigError(`duplicate LLM client name "${client.name}"`);
      definitions.set(client.name, client);
    }
    this.definitions = definitions;
    this.health = options.health ?? new InMemoryLlmHealthStore();
  }

  /** Clients from `SKALD_LLM_CLIENTS`, or the single `default` from `OPENAI_*` + `SKALD_LLM_MODEL`. */
  static fromEnv(env: NodeJS.ProcessEnv = process.env, options: LlmManagerOptions = {}): LlmManager {
    return new LlmManager(loadLlmConfigFromEnv(env).clients, options);
  }

  /** Client names in configuration order. */
  names(): string[] {
    return [...this.definitions.keys()];
  }

  has(name: string): boolean {
    return this.definitions.has(name);
  }

  /** The model a client is configured with; null for a client that is not configured. */
  modelOf(name: string): string | null {
    return this.definitions.get(name)?.model ?? null;
  }

  /** Every client with its health, in configuration order (for `/models` and `GET /api/llm/clients`). No keys. */
  async list(): Promise<LlmClientStatus[]> {
    // Read fresh: a person looks at it (rarely); `select`, before every model call, may use a recent read.
    const health = await this.health.read(this.names(), { fresh: true });
    return [...this.definitions.values()].map((client) => {
      const h = health.get(client.name) as LlmHealth;
      return {
        ...describe(client, h),
        lastSuccessAt: h.lastSuccessAt,
        lastFailureAt: h.lastFailureAt,
        lastError: h.lastError,
        pricing: client.pricing ? { ...client.pricing } : null,
      };
    });
  }

  /** Whether the health in {@link list} and {@link select} is shared by every replica or this process's own. */
  healthMode(): 'shared' | 'local' {
    return this.health.mode?.() ?? 'local';
  }

  /**
   * The client to call next, or null when every client was tried. The pin wins unless tried;
   * otherwise AUTO: usable + strong enough + in scope → usable in scope, strongest → any usable,
   * strongest → the strongest even if down. (See {@link selectLlmClient}.)
   */
  async select(request: LlmSelectRequest): Promise<LlmSelectedClient | null> {
    const health = await this.health.read(this.names());
    const descriptors = [...this.definitions.values()].map((client) =>
      describe(client, health.get(client.name) as LlmHealth),
    );
    const selection = selectLlmClient(descriptors, request);
    return selection ? { ...selection.client, reason: selection.reason } : null;
  }

  /**
   * One streaming call. Resolves with the reassembled answer; rejects with an {@link LlmCallError}
   * (`retriable`, `aborted`, `status`, `clientName`) for any failure of the call, after recording
   * it in the client's health. An exception thrown by `onDelta` aborts the call and is rethrown as is.
   */
  async streamChat(clientName: string, request: LlmChatRequest): Promise<LlmChatResult> {
    const client = this.definitions.get(clientName);
    if (!client) throw new LlmConfigError(`unknown LLM client "${clientName}"`, 'llm_unknown_client');
    try {
      const result = await inChatSpan(client, () => streamChat(this.sdkClient(client), client, request));
      await this.health.recordSuccess(client.name);
      return result;
    } catch (err) {
      if (err instanceof LlmCallError && err.countsAgainstHealth)
        await this.health.recordFailure(client.name, err.message);
      throw err;
    }
  }

  private sdkClient(client: LlmClientDefinition): OpenAI {
    let sdk = this.sdkClients.get(client.name);
    if (!sdk) {
      sdk = new OpenAI({
        baseURL: client.baseUrl,
        // The SDK insists on a credential; local servers (Ollama, vLLM) ignore this placeholder.
        apiKey: client.apiKey ?? 'no-key',
        // Explicit nulls: never pick up OPENAI_ORG_ID / OPENAI_PROJECT_ID / OPENAI_ADMIN_KEY from the environment.
        organization: null,
        project: null,
        adminAPIKey: null,
        maxRetries: 0,
        timeout: client.timeoutMs + SDK_TIMEOUT_MARGIN_MS,
        defaultHeaders: client.headers,
        fetch: this.fetch,
        fetchOptions: LLM_FETCH_OPTIONS,
      });
      this.sdkClients.set(client.name, sdk);
    }
    return sdk;
  }
}

function describe(client: LlmClientDefinition, health: LlmHealth): LlmClientDescriptor {
  return {
    name: client.name,
    baseUrl: client.baseUrl,
    model: client.model,
    strength: client.strength,
    scopes: [...client.scopes],
    priority: client.priority,
    cacheControl: client.cacheControl,
    vision: client.vision ? { ...client.vision } : null,
    health: health.state,
    consecutiveFailures: health.consecutiveFailures,
  };
}
