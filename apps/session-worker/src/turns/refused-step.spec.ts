import { BusRequestError, RemoteError } from '@skald/messaging/bus-errors';
import { LeaseLostError, LoopInvariantError } from '@skald/agent-loop';
import { CommitRejectedError } from '../loop-adapters/session-store/fence';
import { refusedStep } from './refused-step';

describe('refusedStep: what counts against a turn’s retry budget', () => {
  it('counts refusals that repeat on retry', () => {
    expect(refusedStep(new CommitRejectedError('22P05', 'unsupported Unicode escape sequence'))).toBe('22P05');
    expect(refusedStep(new RemoteError({ code: 'invalid_input', message: 'bad' }))).toBe('remote:invalid_input');
    expect(refusedStep(new RemoteError({ code: 'internal', message: 'boom' }))).toBe('remote:internal');
    expect(refusedStep(new BusRequestError('bad_reply', 'approval.check', 'x'))).toBe('remote:bad_reply');
  });

  it('counts a broken invariant (the same stored state breaks it again): a session whose agent left the catalog', () => {
    expect(refusedStep(new LoopInvariantError('agent gone is not in the catalog'))).toBe('invariant');
  });

  it('never counts outages or a lost lease', () => {
    expect(refusedStep(new LeaseLostError('lost'))).toBeNull();
    expect(refusedStep(new BusRequestError('timeout', 'approval.check', 'x'))).toBeNull();
    expect(refusedStep(new BusRequestError('no_responders', 'approval.check', 'x'))).toBeNull();
    expect(refusedStep(new RemoteError({ code: 'unavailable', message: 'db down' }))).toBeNull();
    expect(refusedStep(Object.assign(new Error('connection terminated'), { code: '57P01' }))).toBeNull();
    expect(refusedStep(new Error('ECONNREFUSED'))).toBeNull();
  });
});
