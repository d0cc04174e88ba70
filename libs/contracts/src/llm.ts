import { z } from 'zod';
import { Actor, Source, StoredText, Timestamp } from './common';

/** Health of an LLM client: degraded after 3 consecutive failures, down after 5, healthy after any success. */
export const LlmHealthState = z.enum(['healthy', 'degraded', 'down']);
export type LlmHealthState = z.infer<typeof LlmHealthState>;

/** A configured LLM client as clients see it (`GET /api/llm/clients`, `/models`). Never a key or a URL. */
export const LlmClientInfo = z.object({
  /** 1-based position: what `/model <n>` takes. */
  number: z.number().int().positive(),
  name: z.string(),
  model: z.string(),
  strength: z.enum(['very_low', 'low', 'medium', 'high', 'very_high']),
  scopes: z.array(z.string()),
  priority: z.number().int(),
  health: LlmHealthState,
  consecutive_failures: z.number().int().nonnegative(),
  last_error: z.string().nullable(),
  last_success_at: Timestamp.nullable(),
  last_failure_at: Timestamp.nullable(),
  /** USD per million tokens; null when the operator set no prices. */
  input_cost_per_million: z.number().nullable(),
  output_cost_per_million: z.number().nullable(),
  /** The model sees images (attachments, `read_file` of an image); false: it is told only their paths. */
  vision: z.boolean(),
  /** Pinned by the caller for the `source` of the request. */
  pinned: z.boolean(),
});
export type LlmClientInfo = z.infer<typeof LlmClientInfo>;

export const LlmClientList = z.object({
  items: z.array(LlmClientInfo),
  /** The caller's pin for `source` (null: AUTO, or no source given). */
  pinned: z.string().nullable(),
  /** `shared`: the health of every worker replica; `local`: the shared store is unreachable and this is one replica's view. */
  health_scope: z.enum(['shared', 'local']),
});
export type LlmClientList = z.infer<typeof LlmClientList>;

/** `GET /api/llm/clients?source=` */
export const LlmClientsQuery = z.object({ source: Source.optional() });

export const LlmClientsRequest = z.object({ actor: Actor, source: Source.optional() });

/** Pins a client for the caller's source (`select_client`, `/model`); `auto` clears the pin. */
export const LlmPinRequest = z.object({ actor: Actor, source: Source, client: StoredText(64).min(1) });
/** `client`: the pinned client's name, or `auto`. */
export const LlmPinReply = z.object({ client: z.string() });

/** The LLM slash commands, answered by the session worker as text. */
export const LlmCommandName = z.enum(['/models', '/model', '/cost']);
export const LlmCommandRequest = z.object({
  actor: Actor,
  source: Source,
  command: LlmCommandName,
  args: StoredText(1000).default(''),
});
export const LlmCommandReply = z.object({ content: z.string() });
