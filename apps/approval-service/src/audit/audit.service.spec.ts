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

  it('writes a decision a person reads about at once, and buffers it while Postgres cannot be reached', async () => {
    const { sut, repo, written } = setUp();
    await expect(sut.recordNow(entry('asked'))).resolves.toBe(true);
    expect(written).toEqual(['asked']);
    expect(sut.pending).toBe(0);
    repo.insert.mockRejectedValueOnce(unreachable);
    await expect(sut.recordNow(entry('later'))).resolves.toBe(true);
    expect(sut.pending).toBe(1);
    await sut.flush();
    expect(written).toEqual(['asked', 'later']);
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

describe('AuditService.page: the caller and the rules', () => {
  const stored = (over: Partial<AuditEntry> = {}) => ({
    ...entry('execute_cmd'),
    id: 'a1',
    at: new Date('2026-12-07T10:00:00Z'),
    ...over,
  });

  it("refuses a non-admin's filter to another user (403 user_id) without reading", async () => {
    const { sut: service, repo } = setUp();
    await expect(service.page({ user_id: 'u2', limit: 10 }, { userId: 'u1', role: 'user' })).rejects.toMatchObject({
      body: { code: 'forbidden', field: 'user_id' },
    });
    expect(repo.page).not.toHaveBeenCalled();
  });

  it("names each row's rule: a stored one by its name, a built-in by the code's, a gone one as deleted", async () => {
    const { sut: service, repo } = setUp();
    repo.page.mockResolvedValue({
      hasMore: true,
      items: [
        {
          ...stored({ ruleId: 'r1' }),
          ruleName: 'pushes need a human',
        },
        { ...stored({ ruleId: 'r2' }), ruleName: 'no deploys on Friday' },
        {
          ...stored({ ruleId: '00000000-0000-4000-8000-0000000000b1', by: 'policy', decision: 'deny' }),
          ruleName: null,
        },
        {
          ...stored({ ruleId: 'gone', note: 'rm x: rule “no removals” (deny, priority 3)' }),
          ruleName: null,
        },
        { ...stored(), ruleName: null },
      ],
    });
    const page = await service.page({ limit: 5 }, { userId: 'u1', role: 'user' });
    expect(repo.page).toHaveBeenCalledWith(expect.objectContaining({ userId: 'u1', limit: 5 }));
    expect(page.has_more).toBe(true);
    expect(page.items.map((i) => i.rule_name)).toEqual([
      'pushes need a human',
      'no deploys on Friday',
      'shared memory is writable only from an admin session',
      'a deleted rule',
      undefined,
    ]);
    expect(page.items[0]).toMatchObject({ user_id: 'u1', rule_id: 'r1' });
    // the gate's note, stored when it decided, keeps the name a deleted rule had then
    expect(page.items[3].note).toBe('rm x: rule “no removals” (deny, priority 3)');
  });
});
