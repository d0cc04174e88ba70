import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit';

export const WorkerConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3101),
  HOST: z.string().default('127.0.0.1'),
  /** Lease time to live; renewed by heartbeat every third of it. */
  SKALD_LEASE_TTL_MS: z.coerce.number().int().min(1000).default(4_000),
  /** How often each worker looks for sessions that have work and no live driver. */
  SKALD_SWEEP_INTERVAL_MS: z.coerce.number().int().min(200).default(1_000),
  SKALD_MAX_TOOL_ROUNDS: z.coerce.number().int().min(1).max(500).default(50),
  SKALD_MAX_HISTORY_MESSAGES: z.coerce.number().int().min(2).default(200),
  SKALD_MAX_TOOL_RESULT_CHARS: z.coerce.number().int().min(100).optional(),
  /** Seconds a turn waits for a human in memory before it parks (lease released). */
  SKALD_PARK_AFTER: z.coerce.number().min(0).default(30),
  /** How often a waiting turn re-reads its request, in case an answer's doorbell was lost. */
  SKALD_HUMAN_POLL_MS: z.coerce.number().int().min(100).default(2_000),
  /** Tokens (input + output) a user may spend a UTC day across all sessions; 0 = unlimited. */
  SKALD_USER_DAILY_TOKENS: z.coerce.number().int().min(0).default(0),
  /** Prefix of the Redis keys holding the LLM clients' shared health. */
  SKALD_LLM_HEALTH_PREFIX: z.string().default('skald:llm:health:'),
  /** A client with no outcome for this long is forgotten (healthy again). */
  SKALD_LLM_HEALTH_TTL_S: z.coerce.number().int().min(10).default(86_400),
  /** IANA zone shown to the model (default: the process's zone). */
  SKALD_TIMEZONE: z.string().optional(),
});
export type WorkerConfig = z.infer<typeof WorkerConfigSchema>;
export const WORKER_CONFIG = Symbol('WORKER_CONFIG');
export const WORKER_LOGGER = Symbol('WORKER_LOGGER');
export const WORKER_INSTANCE = Symbol('WORKER_INSTANCE');
