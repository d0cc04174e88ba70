/** Who writes: the lease holder's epoch fences every commit of a turn. */
export interface Fence {
  owner: string;
  epoch: number;
}

/**
 * A commit Postgres refused because of what it holds (SQLSTATE class 22 data exception, 23
 * integrity, 42 syntax or access, 54 program limit): retrying the same step gives the same answer.
 * Connection losses and lease losses are not this.
 */
export class CommitRejectedError extends Error {
  constructor(
    readonly sqlState: string,
    message: string,
  ) {
    super(message);
    this.name = 'CommitRejectedError';
  }
}

const REJECTING_SQLSTATE = /^(22|23|42|54)/;

/** A commit's error as the caller sees it: a refusal for its data becomes a `CommitRejectedError`. */
export function rejected(e: unknown): unknown {
  const code = (e as { code?: unknown } | null)?.code;
  return typeof code === 'string' && REJECTING_SQLSTATE.test(code)
    ? new CommitRejectedError(code, e instanceof Error ? e.message : String(e))
    : e;
}
