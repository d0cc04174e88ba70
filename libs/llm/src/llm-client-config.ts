import { LlmConfigError } from './llm-config.error';
import { isLlmStrength, LLM_STRENGTHS, type LlmStrength } from './llm-strength';

/** One named OpenAI-compatible client, as an operator writes it (e.g. in `SKALD_LLM_CLIENTS`). */
export interface LlmClientConfig {
  /** Unique name: what `/model`, pins, agents' `client` and the logs refer to. */
  name: string;
  /** OpenAI-compatible base URL, e.g. `https://api.openai.com/v1`, `http://localhost:11434/v1`. */
  baseUrl: string;
  model: string;
  /** The key itself. Prefer `apiKeyEnv`. Neither: no key (local servers such as Ollama or vLLM). */
  apiKey?: string;
  /** Name of the environment variable holding the key. */
  apiKeyEnv?: string;
  /** Default `medium`. */
  strength?: LlmStrength;
  /** Scopes this client serves (e.g. `coding`); none means a general client that serves any scope. */
  scope?: string | string[];
  /** Lower is preferred among otherwise equal candidates. Default 100. */
  priority?: number;
  /** Extra body parameters sent with every request (temperature, reasoning_effort, provider routing…). */
  extraParams?: Record<string, unknown>;
  /** The provider takes `cache_control` blocks (Anthropic models through OpenRouter): the caller may mark the static prompt cacheable. */
  cacheControl?: boolean;
  /** Extra HTTP headers (e.g. OpenRouter's `HTTP-Referer`, `X-Title`). */
  headers?: Record<string, string>;
  /** Whole-call limit. Default 600 000 ms. */
  timeoutMs?: number;
  /** Longest silence allowed between two stream events (and before the first). Default 300 000 ms. */
  idleTimeoutMs?: number;
  /** Price of a million input (prompt) tokens, in USD; with `outputCostPerMillion` it makes the cost of each call. */
  inputCostPerMillion?: number;
  /** Price of a million output (completion) tokens, in USD. */
  outputCostPerMillion?: number;
  /** Price of a million input tokens served from the provider's cache; default: the input price. */
  cachedInputCostPerMillion?: number;
  /**
   * The model sees images: `true` for the default limits, or the limits (`maxSide` px, default
   * 1568; `maxBytes` of one encoded image, default 524 288, at most 655 360; `maxImages` per
   * request, default 8). Absent / false: images are left out and the user is told the model cannot
   * see them.
   */
  vision?: boolean | { maxSide?: number; maxBytes?: number; maxImages?: number };
}

/** What a vision client takes: every image is resized and re-encoded to fit. */
export interface LlmVisionLimits {
  /** Longest side, in pixels. */
  maxSide: number;
  /** Bytes of one encoded image. */
  maxBytes: number;
  /** Images in one request (the newest are sent). */
  maxImages: number;
}

/** Anthropic's advice (no resize on its side past 1568 px); OpenAI takes up to 2048 px. */
export const DEFAULT_VISION_LIMITS: LlmVisionLimits = { maxSide: 1568, maxBytes: 512 * 1024, maxImages: 8 };
/** Bounds of the limits: one image travels in one NATS message (`tools.image`, base64), so bytes are capped. */
export const VISION_LIMIT_BOUNDS: Record<keyof LlmVisionLimits, { min: number; max: number }> = {
  maxSide: { min: 32, max: 8192 },
  maxBytes: { min: 4096, max: 640 * 1024 },
  maxImages: { min: 1, max: 100 },
};

/** USD per million tokens. */
export interface LlmPricing {
  inputPerMillion: number;
  outputPerMillion: number;
  cachedInputPerMillion: number;
}

/** A validated client with its key resolved. Holds the secret: never log it or send it anywhere. */
export interface LlmClientDefinition {
  name: string;
  baseUrl: string;
  model: string;
  apiKey: string | null;
  strength: LlmStrength;
  scopes: string[];
  priority: number;
  extraParams: Record<string, unknown>;
  cacheControl: boolean;
  headers: Record<string, string>;
  timeoutMs: number;
  idleTimeoutMs: number;
  /** null when the operator gave no prices: the cost of its calls is unknown (shown as such). */
  pricing: LlmPricing | null;
  /** null: the model cannot see images. */
  vision: LlmVisionLimits | null;
}

export const DEFAULT_LLM_PRIORITY = 100;
export const DEFAULT_LLM_TIMEOUT_MS = 600_000;
export const DEFAULT_LLM_IDLE_TIMEOUT_MS = 300_000;

const NAME = /^[a-zA-Z0-9][a-zA-Z0-9._:-]{0,63}$/;
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** snake_case spellings accepted in JSON configuration. */
const ALIASES: Record<string, keyof LlmClientConfig> = {
  base_url: 'baseUrl',
  api_key: 'apiKey',
  api_key_env: 'apiKeyEnv',
  extra_params: 'extraParams',
  cache_control: 'cacheControl',
  timeout_ms: 'timeoutMs',
  idle_timeout_ms: 'idleTimeoutMs',
  input_cost_per_million: 'inputCostPerMillion',
  output_cost_per_million: 'outputCostPerMillion',
  cached_input_cost_per_million: 'cachedInputCostPerMillion',
};
const VISION_ALIASES: Record<string, keyof LlmVisionLimits> = {
  max_side: 'maxSide',
  max_bytes: 'maxBytes',
  max_images: 'maxImages',
};
const KEYS = new Set<string>([
  'name',
  'baseUrl',
  'model',
  'apiKey',
  'apiKeyEnv',
  'strength',
  'scope',
  'priority',
  'extraParams',
  'cacheControl',
  'headers',
  'timeoutMs',
  'idleTimeoutMs',
  'inputCostPerMillion',
  'outputCostPerMillion',
  'cachedInputCostPerMillion',
  'vision',
]);

/**
 * Validates a list of client configurations and resolves their keys from `env`. Collects every
 * problem and throws one {@link LlmConfigError} naming them all (never a key's value).
 */
export function resolveLlmClients(raw: unknown, env: NodeJS.ProcessEnv, source = 'LLM clients'): LlmClientDefinition[] {
  if (!Array.isArray(raw)) throw new LlmConfigError(`${source}: expected a JSON array of clients`);
  const problems: string[] = [];
  const clients: LlmClientDefinition[] = [];
  raw.forEach((item, i) => {
    const client = resolveOne(item, env, (msg) => problems.push(`[${i}]${msg}`));
    if (client) clients.push(client);
  });
  const seen = new Set<string>();
  for (const client of clients) {
    if (seen.has(client.name)) problems.push(`duplicate client name "${client.name}"`);
    seen.add(client.name);
  }
  if (problems.length > 0) throw new LlmConfigError(`${source} invalid: ${problems.join('; ')}`);
  return clients;
}

function resolveOne(item: unknown, env: NodeJS.ProcessEnv, problem: (msg: string) => void): LlmClientDefinition | null {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) {
    problem(': expected an object');
    return null;
  }
  const config: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(item)) {
    const name = ALIASES[key] ?? key;
    if (!KEYS.has(name)) problem(`.${key}: unknown setting`);
    else config[name] = value;
  }
  let failed = false;
  const bad = (msg: string): void => {
    failed = true;
    problem(msg);
  };
  const c = config as Partial<Record<keyof LlmClientConfig, unknown>>;
  const label = typeof c.name === 'string' ? ` (${c.name})` : '';
  if (typeof c.name !== 'string' || !NAME.test(c.name))
    bad(`.name: expected 1-64 characters [a-zA-Z0-9._:-], starting with a letter or digit`);
  if (typeof c.baseUrl !== 'string' || !isHttpUrl(c.baseUrl)) bad(`${label}.baseUrl: expected an http(s) URL`);
  if (typeof c.model !== 'string' || c.model.trim() === '') bad(`${label}.model: expected a non-empty string`);
  if (c.strength !== undefined && !isLlmStrength(c.strength))
    bad(`${label}.strength: expected one of ${LLM_STRENGTHS.join(', ')}`);
  const scopes = c.scope === undefined ? [] : Array.isArray(c.scope) ? c.scope : [c.scope];
  if (!scopes.every((s) => typeof s === 'string' && s !== ''))
    bad(`${label}.scope: expected a string or an array of strings`);
  if (c.priority !== undefined && !Number.isInteger(c.priority)) bad(`${label}.priority: expected an integer`);
  if (c.extraParams !== undefined && !isPlainObject(c.extraParams)) bad(`${label}.extraParams: expected an object`);
  if (c.cacheControl !== undefined && typeof c.cacheControl !== 'boolean')
    bad(`${label}.cacheControl: expected a boolean`);
  if (
    c.headers !== undefined &&
    !(isPlainObject(c.headers) && Object.values(c.headers).every((v) => typeof v === 'string'))
  ) {
    bad(`${label}.headers: expected an object of strings`);
  }
  for (const key of ['timeoutMs', 'idleTimeoutMs'] as const) {
    const value = c[key];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value > 0))
      bad(`${label}.${key}: expected a number of milliseconds > 0`);
  }
  for (const key of ['inputCostPerMillion', 'outputCostPerMillion', 'cachedInputCostPerMillion'] as const) {
    const value = c[key];
    if (value !== undefined && !(typeof value === 'number' && Number.isFinite(value) && value >= 0))
      bad(`${label}.${key}: expected a price in USD per million tokens (a number >= 0)`);
  }
  const priced = c.inputCostPerMillion !== undefined || c.outputCostPerMillion !== undefined;
  if (priced && (c.inputCostPerMillion === undefined || c.outputCostPerMillion === undefined))
    bad(
      `${label}.${c.inputCostPerMillion === undefined ? 'inputCostPerMillion' : 'outputCostPerMillion'}: give both prices, input and output`,
    );
  if (!priced && c.cachedInputCostPerMillion !== undefined)
    bad(`${label}.cachedInputCostPerMillion: give inputCostPerMillion and outputCostPerMillion too`);
  const vision = resolveVision(c.vision, (msg) => bad(`${label}.vision${msg}`));
  const apiKey = resolveKey(c.apiKey, c.apiKeyEnv, env, (msg) => bad(`${label}${msg}`));
  if (failed) return null;
  return {
    name: c.name as string,
    baseUrl: (c.baseUrl as string).replace(/\/+$/, ''),
    model: c.model as string,
    apiKey,
    strength: (c.strength as LlmStrength | undefined) ?? 'medium',
    scopes: scopes as string[],
    priority: (c.priority as number | undefined) ?? DEFAULT_LLM_PRIORITY,
    extraParams: { ...((c.extraParams as Record<string, unknown> | undefined) ?? {}) },
    cacheControl: (c.cacheControl as boolean | undefined) ?? false,
    headers: { ...((c.headers as Record<string, string> | undefined) ?? {}) },
    timeoutMs: (c.timeoutMs as number | undefined) ?? DEFAULT_LLM_TIMEOUT_MS,
    idleTimeoutMs: (c.idleTimeoutMs as number | undefined) ?? DEFAULT_LLM_IDLE_TIMEOUT_MS,
    pricing: priced
      ? {
          inputPerMillion: c.inputCostPerMillion as number,
          outputPerMillion: c.outputCostPerMillion as number,
          cachedInputPerMillion: (c.cachedInputCostPerMillion ?? c.inputCostPerMillion) as number,
        }
      : null,
    vision,
  };
}

/** `vision`: absent / false → null; true → the defaults; an object → the defaults overridden, each within bounds. */
function resolveVision(raw: unknown, bad: (msg: string) => void): LlmVisionLimits | null {
  if (raw === undefined || raw === false) return null;
  if (raw === true) return { ...DEFAULT_VISION_LIMITS };
  if (!isPlainObject(raw)) {
    bad(': expected true, false or an object { maxSide, maxBytes, maxImages }');
    return null;
  }
  const limits = { ...DEFAULT_VISION_LIMITS };
  for (const [key, value] of Object.entries(raw)) {
    const name = VISION_ALIASES[key] ?? key;
    if (!(name in VISION_LIMIT_BOUNDS)) {
      bad(`.${key}: unknown setting`);
      continue;
    }
    const { min, max } = VISION_LIMIT_BOUNDS[name];
    if (!(Number.isInteger(value) && (value as number) >= min && (value as number) <= max)) {
      bad(`.${key}: expected an integer from ${min} to ${max}`);
      continue;
    }
    limits[name] = value as number;
  }
  return limits;
}

function resolveKey(
  apiKey: unknown,
  apiKeyEnv: unknown,
  env: NodeJS.ProcessEnv,
  bad: (msg: string) => void,
): string | null {
  if (apiKey !== undefined && apiKeyEnv !== undefined) {
    bad('.apiKey / .apiKeyEnv: give one, not both');
    return null;
  }
  if (apiKey !== undefined) {
    if (typeof apiKey !== 'string' || apiKey === '') bad('.apiKey: expected a non-empty string');
    return typeof apiKey === 'string' ? apiKey : null;
  }
  if (apiKeyEnv === undefined) return null;
  if (typeof apiKeyEnv !== 'string' || !ENV_NAME.test(apiKeyEnv)) {
    bad('.apiKeyEnv: expected an environment variable name');
    return null;
  }
  const value = env[apiKeyEnv];
  if (value === undefined || value === '') {
    bad(`.apiKeyEnv: the environment variable ${apiKeyEnv} is not set`);
    return null;
  }
  return value;
}

function isHttpUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:';
  } catch {
    return false;
  }
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
