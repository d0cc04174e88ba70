/**
 * AuditService with a faked repository: automatic decisions are buffered and written in order,
 * kept (not dropped) while Postgres cannot be reached, refused once the buffer is full, and a row
 * Postgres refuses for its content is set aside alone, with an error naming it, while the rest of
 * its batch is written.
 */
import type { Logger } from '@skald/service-kit';
import { fake, newTestService } from '@skald/testing/unit';
import { APPROVAL_LOGGER } from '../config';
import { AuditEntry, AuditRepository } from './audit.repository';
import { AUDIT_FLUSH_MS, AUDIT_MAX_BUFFER, AuditService, argsDigest } from './audit.service';

const entry = (toolName: string): AuditEntry => ({
  userId: 'u1',
  sessionId: 's1',
  toolCallId: `c-${toolName}`,
  requestId: null,
  toolName,
  argsDigest: argsDigest({}),
  decision: 'allow',
  by: 'rule',
  actorUserId: null,
  ruleId: null,
  note: null,
});

function setUp() {
  const log = { error: jest.fn() };
  const t = newTestService(AuditService, [
    fake(AUDIT_FLUSH_MS, 60_000),
    fake(APPROVAL_LOGGER, log as unknown as Logger),
  ]);
  const repo = t.mock(AuditRepository);
  const written: string[] = [];
  repo.insert.mockImplementation(
    async (rows: readonly AuditEntry[]) => void written.push(...rows.map((r) => r.toolName)),
  );
  return { ...t, repo, written, log };
}

const unreachable = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
const badValue = Object.assign(new Error('invalid byte sequence'), { code: '22021' });

describe('AuditService', () => {
  it('writes the buffered decisions in the order they were taken', async () => {
    const { sut, written } = setUp();
    sut.record(entry('a'));
    sut.record(entry('b'));
    expect(sut.pending).toBe(2);
    await sut.flush();
    expect(written).toEqual(['a', 'b']);
    expect(sut.pending).toBe(0);
  });

  it('keeps every decision while Postgres cannot be reached, and writes them when it can', async () => {
    const { sut, repo, written } = setUp();
    repo.insert.mockRejectedValueOnce(unreachable);
    sut.record(entry('a'));
    await sut.flush();
    expect(sut.pending).toBe(1);
    sut.record(entry('b'));
    await sut.flush();
    expect(written).toEqual(['a', 'b']);
  });

  it('refuses a decision once the buffer is full, so the gate refuses tool calls', () => {
    const { sut } = setUp();
    for (let i = 0; i < AUDIT_MAX_BUFFER; i++) sut.record(entry('x'));
    expect(sut.accepting).toBe(false);
    expect(sut.record(entry('y'))).toBe(false);
    expect(sut.pending).toBe(AUDIT_MAX_BUFFER);
  });

  it('sets aside only the row Postgres refuses for its content, naming it in an error', async () => {
    const { sut, repo, written, log } = setUp();
    repo.insert.mockImplementation(async (rows: readonly AuditEntry[]) => {
      if (rows.some((r) => r.toolName === 'bad')) throw badValue;
      written.push(...rows.map((r) => r.toolName));
    });
    for (const name of ['a', 'b', 'bad', 'c', 'd']) sut.record(entry(name));
    await sut.flush();
    expect(written).toEqual(['a', 'b', 'c', 'd']);
    expect(sut.pending).toBe(0);
    expect(log.error).toHaveBeenCalledTimes(1);
    expect(log.error).toHaveBeenCalledWith(
      expect.objectContaining({ toolName: 'bad', toolCallId: 'c-bad', sqlState: '22021' }),
      'an audit entry Postgres refused was set aside',
    );
  });

  it('digests arguments without storing them, the same call to the same digest', () => {
    expect(argsDigest({ command: 'ls' })).toMatch(/^sha256:[0-9a-f]{16}$/);
    expect(argsDigest({ command: 'ls' })).toBe(argsDigest('{"command":"ls"}'));
    expect(argsDigest({ command: 'ls' })).not.toBe(argsDigest({ command: 'rm' }));
  });
});
