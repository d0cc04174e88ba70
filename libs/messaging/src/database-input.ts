import type { ErrorBody } from '@skald/contracts';

/**
 * SQLSTATEs of the "data exception" class (22) that mean the value a request carried cannot be
 * stored as given: the client's input, never a server fault. A schema should have refused it first
 * (StoredText in @skald/contracts); this is the second wall, so that what slipped through still ends
 * in 400 `invalid_input` and not in 500 `internal`.
 */
export const INPUT_SQLSTATES: Readonly<Record<string, string>> = {
  '22021': 'the request contains text that cannot be stored (a NUL byte or invalid Unicode)',
  '22P05': 'the request contains text that cannot be stored (a NUL byte or invalid Unicode)',
  '22001': 'a value in the request is too long to store',
  '22003': 'a number in the request is out of range',
  '22P02': 'a value in the request is not valid for its field',
  '22007': 'a date or time in the request is not valid',
  '22008': 'a date or time in the request is out of range',
};

/** The SQLSTATE of a database error (pg's `code`; TypeORM's QueryFailedError also carries it as `driverError.code`). */
export function sqlState(e: unknown): string | undefined {
  const err = e as { code?: unknown; driverError?: { code?: unknown } } | null;
  const code = err?.driverError?.code ?? err?.code;
  return typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code) ? code : undefined;
}

/** `invalid_input` for a database error caused by the value a request carried; undefined for any other error. */
export function databaseInputError(e: unknown): ErrorBody | undefined {
  const state = sqlState(e);
  const message = state !== undefined ? INPUT_SQLSTATES[state] : undefined;
  return message === undefined ? undefined : { code: 'invalid_input', message };
}
