import { z } from 'zod';
import { Actor, Id, StoredText } from './common';
import { resolvePathAgainst, resolveSessionDirectory, WORKSPACE_ROOT } from './tool-paths';

/** A path of a RunContext: inside the workspace (`/workspace/…` or relative to it), normalised to `/workspace/…`. */
const WorkspacePathField = StoredText(4096)
  .min(1)
  .transform((p, ctx) => {
    const r = resolvePathAgainst(p, { kind: 'workspace', virtual: WORKSPACE_ROOT, segments: [] }, 'path');
    if (!r.ok || r.value.kind !== 'workspace') {
      ctx.addIssue({ code: 'custom', message: r.ok ? `${p} is a memory path, not a workspace path` : r.message });
      return z.NEVER;
    }
    return r.value.virtual;
  });

/**
 * `PUT /sessions/{id}/run-context`: what a user sets for one of their sessions — the working
 * directory (the base of relative paths and of commands) and pre-authorised paths (reads, writes
 * inside them need no approval; a Deny rule still wins). Every path lies inside the workspace.
 * A field left out is cleared. `security_group` is an admin's to set.
 */
export const RunContextInput = z
  .object({
    security_group: StoredText(64).min(1).optional(),
    system_prompt: z.array(StoredText(10_000)).max(20).optional(),
    allow_fs_writes: z.array(WorkspacePathField).max(100).optional(),
    allow_fs_reads: z.array(WorkspacePathField).max(100).optional(),
    working_directory: StoredText(4096)
      .transform((p, ctx) => {
        if (p === '') return undefined;
        const r = resolveSessionDirectory(p);
        if (!r.ok) {
          ctx.addIssue({ code: 'custom', message: r.message });
          return z.NEVER;
        }
        return r.value.virtual;
      })
      .optional(),
  })
  .strict();
export type RunContextInput = z.output<typeof RunContextInput>;

/** A session's RunContext as stored and shown (paths normalised). */
export const RunContextDto = z.object({
  security_group: z.string().nullable(),
  system_prompt: z.array(z.string()),
  allow_fs_writes: z.array(z.string()),
  allow_fs_reads: z.array(z.string()),
  working_directory: z.string().nullable(),
});
export type RunContextDto = z.infer<typeof RunContextDto>;

/** `session.run_context.get` / `session.run_context.set` (queue `session-worker`): one session of the actor. */
export const RunContextGetRequest = z.object({ actor: Actor, session_id: Id });
export const RunContextSetRequest = z.object({
  actor: Actor,
  session_id: Id,
  run_context: z.object({
    security_group: StoredText(64).optional(),
    system_prompt: z.array(StoredText(10_000)).max(20).optional(),
    allow_fs_writes: z.array(StoredText(4096)).max(100).optional(),
    allow_fs_reads: z.array(StoredText(4096)).max(100).optional(),
    working_directory: StoredText(4096).optional(),
  }),
});
