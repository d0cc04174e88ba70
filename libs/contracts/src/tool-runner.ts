import { z } from 'zod';
import { Actor, Id } from './common';

/**
 * `tools.memory_turn` (queue `tool-runner`): a turn's memory, in one request (one statement in the
 * tool runner) — the content of memory documents by path (the agents' `inject_memory` files) and
 * the memory context the loop injects as the dynamic tail system message (the user's and the shared
 * memory documents most relevant to the user's message, short).
 *
 * A missing document (or a path that is not a memory path) has `content: null`; the actor scopes
 * `user-memory/…`. `context` is null when nothing is relevant, or when `query` is null (not asked).
 */
export const MemoryTurnRequest = z.object({
  actor: Actor,
  paths: z.array(z.string().max(600)).max(20),
  /** The user's message (or whatever the turn is about); null: no memory context wanted. */
  query: z
    .string()
    .max(64 * 1024)
    .nullable(),
  /** Upper bound of the context's text in characters (default 2000). */
  max_chars: z.number().int().min(200).max(20_000).optional(),
});
export const MemoryTurnReply = z.object({
  documents: z.array(z.object({ path: z.string(), content: z.string().nullable() })),
  context: z.string().nullable(),
});

/**
 * Workspace files over NATS. A NATS message is bounded (1 MiB by default), so bytes travel in
 * chunks of at most `FILE_CHUNK_BYTES`, base64 in JSON (4/3 of that, well under the bound).
 */
export const FILE_CHUNK_BYTES = 512 * 1024;
const Base64Chunk = z
  .string()
  .max(Math.ceil(FILE_CHUNK_BYTES / 3) * 4)
  .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64');

/**
 * `files.upload` (queue `tool-runner`): one chunk of an attachment the user uploads. Chunks of an
 * upload come in order (`offset` is the bytes already sent); the runner stages them outside the
 * workspace and, on the `last` chunk, stores the file as `/workspace/uploads/<sanitised name>`
 * (a new name when taken) within the workspace quota. A chunk repeated at an offset already
 * received is answered again without being written twice.
 */
export const FileUploadRequest = z.object({
  actor: Actor,
  upload_id: Id,
  /** The name the client gave; the runner sanitises it. */
  name: z.string().max(4096),
  mimetype: z.string().max(255).optional(),
  offset: z.number().int().nonnegative(),
  data: Base64Chunk,
  last: z.boolean(),
});
export const FileUploadReply = z.object({
  received: z.number().int().nonnegative(),
  /** On the last chunk: the stored file, as the message's attachment. */
  attachment: z
    .object({ path: z.string(), name: z.string(), mimetype: z.string().optional(), filesize: z.number().int() })
    .optional(),
});

/**
 * `files.read` (queue `tool-runner`): up to `length` bytes of a workspace file of the actor from
 * `offset` (paths as the model names them: `/workspace/…` or relative to it; never a memory
 * document, never through a symlink that leaves the workspace).
 */
export const FileReadRequest = z.object({
  actor: Actor,
  path: z.string().max(4096),
  offset: z.number().int().nonnegative(),
  length: z.number().int().min(1).max(FILE_CHUNK_BYTES),
});
export const FileReadReply = z.object({
  /** The resolved `/workspace/…` path. */
  path: z.string(),
  size: z.number().int().nonnegative(),
  data: z.string(),
});

/**
 * Bytes of one image made for a vision client: its base64 (4/3 of it) must fit in one NATS message
 * (1 MiB by default) with room to spare. A client's `vision.maxBytes` is capped at this.
 */
export const MAX_VISION_IMAGE_BYTES = 640 * 1024;

/**
 * `tools.image` (queue `tool-runner`): a workspace image of the actor made ready for a vision model
 * — decoded (PNG, JPEG, WebP, GIF's first frame), turned upright, fitted to `max_side` and
 * `max_bytes`, re-encoded as JPEG with no metadata (EXIF, GPS, XMP, ICC dropped). `ok: false`
 * names why it cannot be (not an image, corrupt, too many pixels, missing…): the model reads it.
 */
export const ToolImageRequest = z.object({
  actor: Actor,
  /** As the model names it: `/workspace/…` or relative to it (never a memory document). */
  path: z.string().max(4096),
  max_side: z.number().int().min(32).max(8192),
  max_bytes: z.number().int().min(4096).max(MAX_VISION_IMAGE_BYTES),
});
export const ToolImageReply = z.discriminatedUnion('ok', [
  z.object({
    ok: z.literal(true),
    /** The resolved `/workspace/…` path. */
    path: z.string(),
    mime: z.literal('image/jpeg'),
    width: z.number().int().positive(),
    height: z.number().int().positive(),
    data: z
      .string()
      .max(Math.ceil(MAX_VISION_IMAGE_BYTES / 3) * 4)
      .regex(/^[A-Za-z0-9+/]*={0,2}$/, 'base64'),
  }),
  z.object({ ok: z.literal(false), reason: z.string().max(2000) }),
]);

/** `result_type` of a tool result that shows the model a workspace image (`read_file` of an image). */
export const IMAGE_RESULT_TYPE = 'image';

/** The text of such a result: its first words name the image's path (what `imageResultPath` reads). */
export function imageResultText(path: string, description: string): string {
  return `${path} is an image (${description}). A model that can see images is shown it with this result; describe or use it from there.`;
}

/** The image path a result of type `IMAGE_RESULT_TYPE` shows, or null. */
export function imageResultPath(resultType: string | null, result: string | null): string | null {
  if (resultType !== IMAGE_RESULT_TYPE || result === null) return null;
  const match = /^(\/workspace\/[^\n]*?) is an image \(/.exec(result);
  return match?.[1] ?? null;
}
