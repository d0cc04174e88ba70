import { ErrorCode } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';

/** An approval-service error with a code; the NATS edge answers it as `{ok: false, error}`. */
export class ApprovalError extends RemoteError {
  constructor(code: ErrorCode, message: string, field?: string) {
    super({ code, message, ...(field ? { field } : {}) });
    this.name = 'ApprovalError';
  }
}

export const requestNotFound = (): ApprovalError => new ApprovalError('not_found', 'no such request');
export const adminOnly = (): ApprovalError => new ApprovalError('forbidden', 'admin only');
