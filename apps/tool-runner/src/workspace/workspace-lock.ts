/**
 * Serialises the writes of one workspace across every tool-runner replica. The port on its own: the services and
 * their unit specs name it without loading TypeORM; `PgWorkspaceLock` (pg-workspace-lock.ts) is the adapter.
 */
export abstract class WorkspaceLock {
  abstract run<T>(userId: string, task: () => Promise<T>): Promise<T>;
}
