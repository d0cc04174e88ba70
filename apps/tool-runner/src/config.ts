import { resolve } from 'node:path';
import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit';

export const ToolRunnerConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3103),
  HOST: z.string().default('127.0.0.1'),
  /** One directory per user below this root; on Kubernetes a volume shared by every replica. */
  SKALD_WORKSPACES: z
    .string()
    .min(1)
    .default(() => resolve(process.cwd(), '.skald/workspaces'))
    .transform((p) => resolve(p)),
  /** Disk quota per workspace in bytes (default 1 GiB). */
  SKALD_WORKSPACE_QUOTA: z.coerce
    .number()
    .int()
    .positive()
    .default(1024 ** 3),
  /** `bwrap` (default; fails closed) or `none` (commands run unsandboxed — development only). */
  SKALD_SANDBOX: z.enum(['bwrap', 'none']).default('bwrap'),
});
export type ToolRunnerConfig = z.infer<typeof ToolRunnerConfigSchema>;

/** Injection tokens for the values main.ts creates before Nest. */
export const TOOL_RUNNER_CONFIG = Symbol('TOOL_RUNNER_CONFIG');
export const LOGGER = Symbol('LOGGER');
