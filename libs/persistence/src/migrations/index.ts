import { InitialSchema1764460800000 } from './1764460800000-initial-schema';
import { DefaultApprovalRules1764460800001 } from './1764460800001-default-approval-rules';

/** Every migration, in order. Never edit one that has landed: add a new one. */
export const MIGRATIONS = [InitialSchema1764460800000, DefaultApprovalRules1764460800001];
export { DEFAULT_APPROVAL_RULES } from './1764460800001-default-approval-rules';
