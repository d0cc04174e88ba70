import fc from 'fast-check';
import { ErrorCode } from '@skald/contracts';
import { toErrorBody } from './bus';
import { databaseInputError, INPUT_SQLSTATES } from './database-input';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;

/** A database error as pg raises it (`code`) and as TypeORM wraps it (`driverError.code`). */
const pgError = (code: string) => Object.assign(new Error(`error ${code}`), { code });
const typeormError = (code: string) => Object.assign(new Error(`query failed ${code}`), { driverError: pgError(code) });

describe('the NATS error envelope for a value Postgres refused', () => {
  it('answers each input SQLSTATE (NUL byte, invalid Unicode, too long, out of range, bad text) with invalid_input', () => {
    for (const code of ['22021', '22P05', '22001', '22003', '22P02'])
      for (const e of [pgError(code), typeormError(code)])
        expect({ code, body: toErrorBody(e) }).toEqual({
          code,
          body: { code: 'invalid_input', message: INPUT_SQLSTATES[code] },
        });
  });

  it('answers every other SQLSTATE and any other error with internal, never with its text (generated)', () => {
    const other = fc
      .stringMatching(/^[0-9A-Z]{5}$/)
      .filter((c) => !(c in INPUT_SQLSTATES))
      .chain((c) => fc.constantFrom(pgError(c), typeormError(c)));
    fc.assert(
      fc.property(other, (e) => {
        const body = toErrorBody(e);
        return body.code === 'internal' && body.message === 'internal error' && databaseInputError(e) === undefined;
      }),
      { seed, numRuns: 2000 },
    );
    // a unique violation, a deadlock, a cancelled statement: server side, not the client's value
    for (const code of ['23505', '40P01', '57014']) expect(toErrorBody(pgError(code)).code).toBe('internal');
  });

  it('keeps a coded error its code, and every message a client can be shown names no SQL', () => {
    expect(toErrorBody(Object.assign(new Error('gone'), { code: 'not_found' }))).toMatchObject({ code: 'not_found' });
    for (const message of Object.values(INPUT_SQLSTATES)) expect(message).not.toMatch(/SQL|relation|column|22/);
    expect(ErrorCode.options).toContain('invalid_input');
  });
});
