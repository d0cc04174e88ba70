import { z } from 'zod';
import { Actor, Id } from './common';

/**
 * `tools.memory_context` (queue `tool-runner`): the memory context the loop injects as the dynamic
 * tail system message of a turn — the user's and the shared memory documents most relevant to the
 * user's message, short. `context` is null when nothing is relevant.
 */
export const MemoryContextRequest = z.object({
  actor: Actor,
  session_id: Id,
  /** The user's message (or whatever the turn is about). */
  query: z.string().max(64 * 1024),
  /** Upper bound of the returned text in characters (default 2000). */
  max_chars: z.number().int().min(200).max(20_000).optional(),
});
export const MemoryContextReply = z.object({ context: z.string().nullable() });

/**
 * `tools.memory_read` (queue `tool-runner`): the content of memory documents by path, for the
 * agents' `inject_memory` files. A missing document (or a path that is not a memory path) has
 * `content: null`; the actor scopes `user-memory/…`.
 */
export const MemoryReadRequest = z.object({
  actor: Actor,
  paths: z.array(z.string().max(600)).max(20),
});
export const MemoryReadReply = z.object({
  documents: z.array(z.object({ path: z.string(), content: z.string().nullable() })),
});
