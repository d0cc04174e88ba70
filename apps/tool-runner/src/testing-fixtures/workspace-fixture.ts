import { randomUUID } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ToolPath } from '@skald/contracts';
import { ToolContext } from '../exec/tool-context';
import { FileToolsService } from '../files/file-tools.service';
import { PatternPool } from '../patterns/pattern-pool';
import { WorkspacesService } from '../workspace/workspaces.service';

/** A workspaces root in a temp dir, a user in it, and the file tools over it. */
export interface WorkspaceFixture {
  base: string;
  userId: string;
  /** Host directory of the user's workspace (created). */
  home: string;
  workspaces: WorkspacesService;
  files: FileToolsService;
  ctx(over?: Partial<ToolContext>): ToolContext;
  cleanup(): Promise<void>;
}

export async function workspaceFixture(
  opts: { quota?: number; inodes?: number; usageTtlMs?: number } = {},
): Promise<WorkspaceFixture> {
  const base = await mkdtemp(join(tmpdir(), 'skald-tr-'));
  const workspaces = new WorkspacesService({
    root: join(base, 'ws'),
    quota: opts.quota ?? 1024 ** 3,
    inodes: opts.inodes,
    usageTtlMs: opts.usageTtlMs ?? 0,
  });
  await workspaces.onModuleInit();
  const userId = randomUUID();
  const jail = await workspaces.jail(userId);
  const patterns = new PatternPool();
  const files = new FileToolsService(workspaces, patterns);
  return {
    base,
    userId,
    home: jail.root,
    workspaces,
    files,
    ctx: (over = {}) => ({
      userId,
      role: 'user',
      sessionId: randomUUID(),
      toolCallId: randomUUID(),
      workdir: '/workspace',
      signal: new AbortController().signal,
      ...over,
    }),
    cleanup: async () => {
      await patterns.onModuleDestroy();
      await rm(base, { recursive: true, force: true });
    },
  };
}

/** A path argument as the registry's schema parses it (specs call the tools' services directly). */
export const tp = (path: string): ToolPath => path as ToolPath;
