import { Actor, adminOnlyRunContextField, adminOnlyRunContextMessage } from '@skald/contracts';
import { ApiError } from './api-error';

/**
 * 403 naming the field when a non-admin's RunContext (or any body that selects rules the same
 * way) sets a field only an admin sets (`ADMIN_ONLY_RUN_CONTEXT_FIELDS`). `at` is where the
 * RunContext sits in the body (`run_context` of a cron job), so the field is named as sent.
 */
export function refuseAdminOnlyFields(actor: Actor, rc: Readonly<Record<string, unknown>> | undefined, at = ''): void {
  const f = adminOnlyRunContextField(rc, actor.role);
  if (f === null) return;
  const field = at ? `${at}.${f}` : f;
  throw new ApiError('forbidden', adminOnlyRunContextMessage(field), field);
}
