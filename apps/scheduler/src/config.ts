import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit';

export const SchedulerConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3104),
  HOST: z.string().default('127.0.0.1'),
});
export type SchedulerConfig = z.infer<typeof SchedulerConfigSchema>;
