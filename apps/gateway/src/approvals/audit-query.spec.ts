/**
 * The audit's filter query, attacked: generated query strings either parse into a bounded filter
 * or are refused with a 400 naming the field; a non-admin filtering to another user is refused
 * (403 `user_id`) before anything is asked.
 */
import fc from 'fast-check';
import { randomUUID } from 'node:crypto';
import { AUDIT_PAGE_MAX, Actor, AuditDecision, ROUTES } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { validate } from '../http/validate';
import { ApprovalConsoleController } from './approval-console.controller';
import type { ApprovalsGateway } from './approvals.gateway';

const SEED = 3807;
const FIELDS = ['session_id', 'user_id', 'tool', 'decision', 'since', 'until', 'before', 'limit'] as const;
const parse = (q: Record<string, unknown>) => validate(ROUTES.listAudit.query, q);
function refusal(q: Record<string, unknown>): { code: string; status: number; field?: string } {
  try {
    parse(q);
  } catch (e) {
    if (e instanceof ApiError) return { code: e.code, status: e.status, field: e.field };
    throw e;
  }
  throw new Error(`accepted ${JSON.stringify(q)}`);
}

const hostile = fc.oneof(
  fc.string({ maxLength: 40 }),
  // a repeated parameter (`?decision=a&decision=b`) arrives as an array
  fc.array(fc.string({ maxLength: 8 }), { maxLength: 3 }),
  fc.constantFrom(
    "' OR 1=1 --",
    '1; DROP TABLE approval_audit',
    '$1',
    '%00',
    '\u0000',
    '\ud800',
    '../../etc/passwd',
    '<script>alert(1)</script>',
    '1e9',
    '-1',
    '0',
    '1.5',
    'NaN',
    'Infinity',
    '9'.repeat(400),
    '2026-13-01T00:00:00Z',
    '2026-02-30T00:00:00Z',
    '2026-12-07',
    '2026-12-07T10:00:00',
    'yesterday',
    'DENY',
    'approve ',
  ),
);

describe('GET /api/approval/audit query', () => {
  it('any query string parses into a bounded filter, or is a 400 naming one of its fields', () => {
    fc.assert(
      fc.property(fc.dictionary(fc.constantFrom(...FIELDS), hostile, { maxKeys: 8 }), (q) => {
        let parsed: ReturnType<typeof parse>;
        try {
          parsed = parse(q);
        } catch (e) {
          expect(e).toBeInstanceOf(ApiError);
          const err = e as ApiError;
          expect([err.code, err.status]).toEqual(['invalid_input', 400]);
          expect(FIELDS).toContain(err.field);
          expect(q).toHaveProperty(err.field!);
          return;
        }
        expect(Number.isInteger(parsed.limit) && parsed.limit >= 1 && parsed.limit <= AUDIT_PAGE_MAX).toBe(true);
        if (parsed.decision !== undefined) expect(AuditDecision.options).toContain(parsed.decision);
        for (const t of [parsed.since, parsed.until])
          if (t !== undefined) expect(Number.isNaN(Date.parse(t))).toBe(false);
      }),
      { seed: SEED, numRuns: 2000 },
    );
  });

  it.each([
    [{ since: '2026-13-01T00:00:00Z' }, 'since'],
    [{ since: '2026-02-30T00:00:00Z' }, 'since'],
    [{ until: 'yesterday' }, 'until'],
    [{ until: '2026-12-07' }, 'until'],
    [{ since: '2026-12-07T10:00:00' }, 'since'],
    [{ since: '2026-12-07T10:00:00Z', until: '2026-12-07T09:00:00Z' }, 'until'],
    [{ since: '2026-12-07T10:00:00Z', until: '2026-12-07T10:00:00Z' }, 'until'],
    [{ limit: '201' }, 'limit'],
    [{ limit: '1e9' }, 'limit'],
    [{ limit: '9'.repeat(400) }, 'limit'],
    [{ limit: '0' }, 'limit'],
    [{ limit: '-1' }, 'limit'],
    [{ limit: '1.5' }, 'limit'],
    [{ limit: 'NaN' }, 'limit'],
    [{ decision: 'DENY' }, 'decision'],
    [{ decision: 'escalate' }, 'decision'],
    [{ decision: "' OR 1=1 --" }, 'decision'],
    [{ user_id: "' OR 1=1 --" }, 'user_id'],
    [{ session_id: '1; DROP TABLE approval_audit' }, 'session_id'],
    [{ before: '$1' }, 'before'],
    [{ tool: '' }, 'tool'],
    [{ tool: 'x'.repeat(257) }, 'tool'],
  ])('%j is a 400 naming %s', (q, field) => {
    expect(refusal(q)).toEqual({ code: 'invalid_input', status: 400, field });
  });

  it('a tool name is matched exactly, whatever it holds: an injection-ish name is a value, not syntax', () => {
    expect(parse({ tool: "' OR 1=1 --" })).toMatchObject({ tool: "' OR 1=1 --", limit: 50 });
    expect(parse({ since: '2026-12-07T10:00:00+01:00', limit: '200' })).toMatchObject({
      since: '2026-12-07T10:00:00+01:00',
      limit: 200,
    });
  });
});

describe('audit filters and the caller', () => {
  function controller() {
    const audit = jest.fn(async () => ({ items: [], has_more: false }));
    return { c: new ApprovalConsoleController({ audit } as unknown as ApprovalsGateway), audit };
  }
  const user: Actor = { userId: randomUUID(), role: 'user' };
  const admin: Actor = { userId: randomUUID(), role: 'admin' };

  it('a non-admin filtering to another user is refused (403 user_id) and nothing is asked', () => {
    const { c, audit } = controller();
    let err: unknown;
    try {
      void c.audit(user, { user_id: randomUUID() });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ code: 'forbidden', status: 403, field: 'user_id' });
    expect(audit).not.toHaveBeenCalled();
  });

  it('a non-admin may name themselves; an admin anyone; the filters reach the approval service as parsed', async () => {
    const { c, audit } = controller();
    await c.audit(user, { user_id: user.userId, decision: 'deny' });
    const other = randomUUID();
    await c.audit(admin, { user_id: other, tool: 'execute_cmd', limit: '10' });
    expect(audit.mock.calls).toEqual([
      [{ actor: user, user_id: user.userId, decision: 'deny', limit: 50 }],
      [{ actor: admin, user_id: other, tool: 'execute_cmd', limit: 10 }],
    ]);
  });
});
