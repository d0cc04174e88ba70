import { z } from 'zod';
import { DEFAULT_REDIS_PREFIXES, userCapSetting } from '@skald/contracts';
import { DEFAULT_LOOP_CONFIG } from '@skald/agent-loop';
import { BaseConfigSchema } from '@skald/service-kit/config';

export const WorkerConfigSchema = BaseConfigSchema.extend({
  REDIS_URL: z.string().default('redis://127.0.0.1:6379'),
  PORT: z.coerce.number().int().min(0).max(65535).default(3101),
  HOST: z.string().default('127.0.0.1'),
  /** Lease time to live; renewed by heartbeat every third of it. */
  SKALD_LEASE_TTL_MS: z.coerce.number().int().min(1000).default(4_000),
  /** How often each worker looks for sessions that have work and no live driver. */
  SKALD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(200).default(1_000),
  SKALD_MAX_TOOL_ROUNDS: z.coerce.number().int().min(1).max(500).default(50),
  /**
   * How long, in ms from the first attempt, a request that finds no service to answer it (a tool
   * runner or approval service restarting: nothing was delivered) is sent again, with capped
   * exponential backoff and jitter, before the call fails "not run"; 0 fails it at once.
   */
  SKALD_NO_RESPONDER_RETRY_MS: z.coerce.number().int().min(0).max(300_000).default(15_000),
  /**
   * LLM clients one round may try (the selected one and its fallbacks, each after its own
   * retries) before the turn fails with `llm_failed`.
   */
  SKALD_LLM_MAX_CLIENTS: z.coerce.number().int().min(1).max(10).default(DEFAULT_LOOP_CONFIG.maxLlmAttempts),
  /**
   * Fan-out width: calls of one batch run at once when every call of it is safe to run
   * concurrently (read-only tools, sub-agents); 1 runs every batch one call after another.
   */
  SKALD_MAX_PARALLEL_CALLS: z.coerce.number().int().min(1).max(32).default(DEFAULT_LOOP_CONFIG.maxParallelCalls),
  /**
   * Deepest sub-agent (the conversation's agent is depth 0): an agent at this depth is not offered
   * `execute_task` / `execute_subtask`; 0 turns sub-agents off.
   */
  SKALD_MAX_AGENT_DEPTH: z.coerce.number().int().min(0).max(10).default(DEFAULT_LOOP_CONFIG.maxDepth),
  /** Tries of a retriable LLM error (429, 5xx, timeout, reset) on one client before the next. */
  SKALD_LLM_RETRY_TRIES: z.coerce.number().int().min(1).max(10).default(3),
  /** Seconds one client's retries may wait in all (a longer Retry-After moves on at once). */
  SKALD_LLM_RETRY_MAX_WAIT_S: z.coerce.number().min(0).max(600).default(60),
  SKALD_MAX_HISTORY_MESSAGES: z.coerce.number().int().min(2).default(200),
  SKALD_MAX_TOOL_RESULT_CHARS: z.coerce.number().int().min(100).optional(),
  /** Seconds a turn waits for a human in memory before it parks (lease released). */
  SKALD_PARK_AFTER: z.coerce.number().min(0).default(30),
  /** How often a waiting turn re-reads its request, in case an answer's doorbell was lost. */
  SKALD_HUMAN_POLL_MS: z.coerce.number().int().min(100).default(2_000),
  /** Daily token limit (input + output, per UTC day) of users without a limit of their own or of a group with a budget; 0 = none. */
  SKALD_USER_DAILY_TOKENS: z.coerce.number().int().min(0).default(0),
  SKALD_MAX_SESSIONS_PER_USER: userCapSetting('sessions'),
  SKALD_MAX_QUEUED_MESSAGES_PER_USER: userCapSetting('queued_messages'),
  SKALD_MAX_CONCURRENT_TURNS_PER_USER: userCapSetting('concurrent_turns'),
  /** Prefix of the Redis keys holding the LLM clients' shared health. */
  SKALD_LLM_HEALTH_PREFIX: z.string().default(DEFAULT_REDIS_PREFIXES.llmHealthPrefix),
  /** A client with no outcome for this long is forgotten (healthy again). */
  SKALD_LLM_HEALTH_TTL_S: z.coerce.number().int().min(10).default(86_400),
  /** A worker reads the shared LLM health at most this often (ms); another worker's change is seen within it. */
  SKALD_LLM_HEALTH_CACHE_MS: z.coerce.number().int().min(0).max(60_000).default(1_000),
  /** IANA zone shown to the model (default: the process's zone). */
  SKALD_TIMEZONE: z
    .string()
    .refine((tz) => {
      try {
        new Intl.DateTimeFormat('en-US', { timeZone: tz });
        return true;
      } catch {
        return false;
      }
    }, 'not an IANA time zone (e.g. Europe/Rome)')
    .optional(),
  /** The built-in agents (`<id>/AGENT.md` + `meta.json`); default `agents/` of the repository. */
  SKALD_AGENTS_DIR: z.string().optional(),
  /** `__KEY__` substitutions for every agent prompt, as a JSON object of strings (e.g. {"COMPANY":"Acme"}). */
  SKALD_PROMPT_VARS: z
    .string()
    .default('{}')
    .transform((text, ctx) => {
      try {
        const v: unknown = JSON.parse(text);
        if (v && typeof v === 'object' && !Array.isArray(v) && Object.values(v).every((x) => typeof x === 'string'))
          return v as Record<string, string>;
      } catch {
        /* reported below */
      }
      ctx.addIssue({ code: 'custom', message: 'expected a JSON object of strings' });
      return z.NEVER;
    }),
  /** `on`: a conversation's title is written by its model in the background after its first exchange. */
  SKALD_TITLES: z.enum(['on', 'off']).default('on'),
  /** Compaction is on when set: summarise older history at turn start above this many estimated tokens. */
  SKALD_COMPACTION_THRESHOLD_TOKENS: z.coerce.number().int().min(500).optional(),
  /** Message rows compaction keeps verbatim. */
  SKALD_COMPACTION_KEEP_RECENT: z.coerce.number().int().min(1).max(1000).default(6),
  /** Strength of the summarising model (AUTO selection). */
  SKALD_COMPACTION_STRENGTH: z.enum(['very_low', 'low', 'medium', 'high', 'very_high']).optional(),
  /** The model's usable context in estimated tokens: larger tool results are cut to fit (default: none). */
  SKALD_CONTEXT_BUDGET_TOKENS: z.coerce.number().int().min(1000).optional(),
});
export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;
export const WORKER_CONFIG = Symbol('WORKER_CONFIG');
export const WORKER_LOGGER = Symbol('WORKER_LOGGER');
export const WORKER_INSTANCE = Symbol('WORKER_INSTANCE');
