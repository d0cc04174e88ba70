import { REDIS_SERVICES, type RedisService } from '@skald/contracts';

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
