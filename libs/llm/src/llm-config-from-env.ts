import { resolveLlmClients, type LlmClientDefinition } from './llm-client-config';
import { LlmConfigError } from './llm-config.error';

export const DEFAULT_OPENAI_BASE_URL = 'https://api.openai.com/v1';
export const DEFAULT_CLIENT_NAME = 'default';

export interface LlmEnvConfig {
  clients: LlmClientDefinition[];
  /** Where the clients came from; `none` when no LLM is configured at all. */
  source: 'SKALD_LLM_CLIENTS' | 'OPENAI_ENV' | 'none';
}

/**
 * LLM clients from the environment:
 * - `SKALD_LLM_CLIENTS`: a JSON array of {@link LlmClientConfig} (camelCase or snake_case keys);
 *   keys are best given by `apiKeyEnv`. When set, it is the whole configuration.
 * - otherwise `OPENAI_BASE_URL` (default `https://api.openai.com/v1`), `OPENAI_API_KEY` and
 *   `SKALD_LLM_MODEL` (required when either of the others is set) make one client named `default`.
 * - none of them: no clients (`source: 'none'`), which a launcher may answer by starting llm-sim.
 */
export function loadLlmConfigFromEnv(env: NodeJS.ProcessEnv = process.env): LlmEnvConfig {
  const json = env.SKALD_LLM_CLIENTS?.trim();
  if (json) {
    let raw: unknown;
    try {
      raw = JSON.parse(json);
    } catch (err) {
      throw new LlmConfigError(`SKALD_LLM_CLIENTS is not valid JSON: ${(err as Error).message}`);
    }
    const clients = resolveLlmClients(raw, env, 'SKALD_LLM_CLIENTS');
    if (clients.length === 0)
      throw new LlmConfigError('SKALD_LLM_CLIENTS is an empty list: configure at least one client, or unset it');
    return { clients, source: 'SKALD_LLM_CLIENTS' };
  }
  const baseUrl = env.OPENAI_BASE_URL?.trim();
  const hasKey = Boolean(env.OPENAI_API_KEY);
  const model = env.SKALD_LLM_MODEL?.trim();
  if (!baseUrl && !hasKey && !model) return { clients: [], source: 'none' };
  if (!model) {
    throw new LlmConfigError(
      'SKALD_LLM_MODEL is required with OPENAI_BASE_URL / OPENAI_API_KEY (the model name to ask for, e.g. gpt-4o-mini)',
    );
  }
  const config = {
    name: DEFAULT_CLIENT_NAME,
    baseUrl: baseUrl || DEFAULT_OPENAI_BASE_URL,
    model,
    ...(hasKey ? { apiKeyEnv: 'OPENAI_API_KEY' } : {}),
  };
  return {
    clients: resolveLlmClients([config], env, 'OPENAI_BASE_URL / OPENAI_API_KEY / SKALD_LLM_MODEL'),
    source: 'OPENAI_ENV',
  };
}
