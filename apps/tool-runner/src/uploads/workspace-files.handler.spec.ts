import { RemoteError } from '@skald/messaging/bus-errors';
import { ToolError, type ToolErrorCode } from '../tool-error';
import { asWireError } from './workspace-files.handler';

const CODES: ToolErrorCode[] = [
  'invalid_argument',
  'not_found',
  'outside_workspace',
  'forbidden',
  'not_a_file',
  'not_a_directory',
  'binary',
  'too_large',
  'quota_exceeded',
  'timed_out',
  'stopped',
  'unavailable',
  'io',
  'stale',
];

describe('asWireError: a workspace error as the bus answers it', () => {
  it('a missing file (and every answer about the request) is a coded RemoteError — answered, not logged as a failed handler', () => {
    const e = asWireError(new ToolError('not_found', '/workspace/a.txt does not exist'));
    expect(e).toBeInstanceOf(RemoteError);
    expect((e as RemoteError).body).toEqual({ code: 'not_found', message: '/workspace/a.txt does not exist' });
    for (const code of CODES.filter((c) => c !== 'io'))
      expect(asWireError(new ToolError(code, 'x'))).toBeInstanceOf(RemoteError);
  });

  it('an I/O failure stays an internal error, which the bus logs', () => {
    const e = asWireError(new ToolError('io', 'EIO'));
    expect(e).not.toBeInstanceOf(RemoteError);
    expect(e).toMatchObject({ code: 'internal', message: 'EIO' });
  });

  it('anything else passes through', () => {
    const other = new Error('boom');
    expect(asWireError(other)).toBe(other);
  });
});
