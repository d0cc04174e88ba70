import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit';

export const ApprovalConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3102),
  HOST: z.string().default('127.0.0.1'),
  /** How often automatic decisions buffered for the audit log are written. */
  SKALD_AUDIT_FLUSH_MS: z.coerce.number().int().min(10).max(60_000).default(200),
  /** Lifetime of a narrow "approve for this session" (the card shows it); 1 h by default. */
  SKALD_SESSION_APPROVAL_SECS: z.coerce
    .number()
    .int()
    .min(60)
    .max(30 * 24 * 3600)
    .default(3600),
});
export type ApprovalConfig = z.infer<typeof ApprovalConfigSchema>;
export const APPROVAL_LOGGER = Symbol('APPROVAL_LOGGER');
/** Injection token: the default lifetime of a narrow session approval, in seconds. */
export const SESSION_APPROVAL_SECS = Symbol('SESSION_APPROVAL_SECS');
export const DEFAULT_SESSION_APPROVAL_SECS = 3600;
