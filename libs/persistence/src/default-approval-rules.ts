// The default approval seed on its own (`@skald/persistence/default-approval-rules`): the rule engine's specs read it
// without loading TypeORM, the entities and every other migration with the package's index.
export { DEFAULT_APPROVAL_RULES } from './migrations/1764460800001-default-approval-rules';
