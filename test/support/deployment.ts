import type { z } from 'zod';
import { REDIS_SERVICES, type RedisService } from '@skald/contracts';
import { ApprovalConfigSchema } from '../../apps/approval-service/src/config';
import { GatewayConfigSchema } from '../../apps/gateway/src/config';
import { SchedulerConfigSchema } from '../../apps/scheduler/src/config';
import { WorkerConfigSchema } from '../../apps/session-worker/src/config';
import { ToolRunnerConfigSchema } from '../../apps/tool-runner/src/config';

/** The five apps and the HTTP port each listens on, as Compose and k8s deploy them. */
export const APPS = {
  gateway: 8080,
  'session-worker': 3101,
  'approval-service': 3102,
  'tool-runner': 3103,
  scheduler: 3104,
} as const;
export type AppName = keyof typeof APPS;
export const APP_NAMES = Object.keys(APPS) as AppName[];

/** Whether the app gets Redis credentials (only the session worker and the scheduler use Redis). */
export const usesRedis = (app: AppName): app is RedisService => (REDIS_SERVICES as readonly string[]).includes(app);

/** The commands of a migration step's `sh -c` script, in order (`a && exec b` → [a, b]). */
export const shellSteps = (script: unknown): string[] =>
  String(script)
    .split('&&')
    .map((step) => step.trim().replace(/^exec /, ''));

/** Each app's configuration schema (what it reads from the environment at start). */
export const APP_CONFIG_SCHEMAS: Record<AppName, z.ZodObject> = {
  gateway: GatewayConfigSchema,
  'session-worker': WorkerConfigSchema,
  'approval-service': ApprovalConfigSchema,
  'tool-runner': ToolRunnerConfigSchema,
  scheduler: SchedulerConfigSchema,
};

/**
 * The variables an app cannot start without: those of its schema with neither a default nor
 * `.optional()`, asked of the schema itself (a variable whose absence it refuses).
 */
export function requiredEnv(app: AppName): string[] {
  const shape = APP_CONFIG_SCHEMAS[app].shape as Record<string, z.ZodType>;
  return Object.keys(shape).filter((name) => !shape[name].safeParse(undefined).success);
}
