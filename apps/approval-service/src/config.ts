import { z } from 'zod';
import { BaseConfigSchema } from '@skald/service-kit/config';

export const ApprovalConfigSchema = BaseConfigSchema.extend({
  PORT: z.coerce.number().int().min(0).max(65535).default(3102),
  HOST: z.string().default('127.0.0.1'),
  /** How often automatic decisions buffered for the audit log are written. While they cannot be, up to 20,000 are kept; past that every tool call is refused (`skald_approval_audit_pending`). */
  SKALD_AUDIT_FLUSH_MS: z.coerce.number().int().min(10).max(60_000).default(200),
  /**
   * Milliseconds the compiled rule set is trusted at most without re-reading the rules' version row.
   * Every change through the API reaches every replica at once (`approval.rules.changed`), and a lost
   * NATS connection drops the rule set; the bound is what a broadcast missed otherwise (or an edit in
   * SQL) can cost. The version is re-read in the background from 70 % of it on.
   */
  SKALD_RULES_MAX_AGE_MS: z.coerce.number().int().min(100).max(60_000).default(5000),
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
/** Injection token: `SKALD_RULES_MAX_AGE_MS`. */
export const RULES_MAX_AGE_MS = Symbol('RULES_MAX_AGE_MS');
