import fc from 'fast-check';
import { RemoteError } from '@skald/messaging/bus-errors';
import type { UsageReportRepository, UsageScope } from './usage-report.repository';
import { daysOf, UsageReportService } from './usage-report.service';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 39;
const ALICE = '00000000-0000-4000-8000-00000000000a';
const BOB = '00000000-0000-4000-8000-00000000000b';
const GROUP = '00000000-0000-4000-8000-0000000000c1';

/** A repository that answers fixed rows and remembers the scopes it was asked. */
function fakeRepo(): { repo: UsageReportRepository; scopes: UsageScope[]; groupScopes: UsageScope[] } {
  const scopes: UsageScope[] = [];
  const groupScopes: UsageScope[] = [];
  const sums = (calls: number, priced: number) => ({
    calls: String(calls),
    input_tokens: String(calls * 100),
    output_tokens: String(calls * 10),
    priced_calls: String(priced),
    cost_usd: String(priced * 0.5),
  });
  const repo = {
    byDay: (s: UsageScope) => {
      scopes.push(s);
      return Promise.resolve([{ day: s.from, ...sums(2, 2) }]);
    },
    byModel: () => Promise.resolve([{ client: 'a', model: 'm1', ...sums(2, 2) }]),
    topUsers: (_s: UsageScope, limit: number) => Promise.resolve([{ user_id: BOB, ...sums(2, 0) }].slice(0, limit)),
    byGroup: (s: UsageScope) => {
      groupScopes.push(s);
      return Promise.resolve([
        { group_id: GROUP, name: 'Interns', users: 3, ...sums(3, 3) },
        { group_id: null, name: null, users: 1, ...sums(1, 0) },
      ]);
    },
    failures: (s: UsageScope) =>
      Promise.resolve([
        { day: s.from, client: 'a', model: 'm1', error_kind: 'timeout', calls: 1 },
        { day: s.from, client: 'b', model: 'm2', error_kind: 'server', calls: 3 },
      ]),
  } as unknown as UsageReportRepository;
  return { repo, scopes, groupScopes };
}

const actor = (userId: string, role: 'user' | 'admin') => ({ userId, role });

describe('UsageReportService', () => {
  it('refuses a non-admin any report but their own, and reads nothing for it', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uuid(), fc.option(fc.uuid(), { nil: null }), async (caller, asked) => {
        fc.pre(asked !== caller);
        const { repo, scopes } = fakeRepo();
        const svc = new UsageReportService(repo);
        const call = svc.report({
          actor: actor(caller, 'user'),
          user_id: asked,
          from: '2026-01-01',
          until: '2026-01-08',
          top: 10,
        });
        await expect(call).rejects.toBeInstanceOf(RemoteError);
        await expect(call).rejects.toMatchObject({ body: { code: 'forbidden' } });
        expect(scopes).toEqual([]);
      }),
      { seed, numRuns: 500 },
    );
  });

  it('gives a user their own report, every day of the range listed, without top users', async () => {
    const { repo, scopes } = fakeRepo();
    const r = await new UsageReportService(repo).report({
      actor: actor(ALICE, 'user'),
      user_id: ALICE,
      from: '2026-01-30',
      until: '2026-02-02',
      top: 10,
    });
    expect(scopes[0]).toEqual({ userId: ALICE, from: '2026-01-30', until: '2026-02-02' });
    expect(r.days.map((d) => d.day)).toEqual(['2026-01-30', '2026-01-31', '2026-02-01']);
    expect(r.days[1]).toMatchObject({ calls: 0, cost_usd: null, failed_calls: 0 });
    expect(r.totals).toEqual({ calls: 2, input_tokens: 200, output_tokens: 20, cost_usd: 1, failed_calls: 4 });
    expect(r.top_users).toEqual([]);
    // A user's own report names no group (groups are an admin's view of everyone).
    expect(r.groups).toEqual([]);
    // A client and model whose every call failed is listed with zero answered calls.
    expect(r.models).toEqual([
      { client: 'a', model: 'm1', calls: 2, input_tokens: 200, output_tokens: 20, cost_usd: 1, failed_calls: 1 },
      { client: 'b', model: 'm2', calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null, failed_calls: 3 },
    ]);
  });

  it("gives an admin every user's report with the top users (no price: cost null)", async () => {
    const { repo, scopes } = fakeRepo();
    const r = await new UsageReportService(repo).report({
      actor: actor(ALICE, 'admin'),
      user_id: null,
      from: '2026-01-01',
      until: '2026-01-02',
      top: 5,
    });
    expect(scopes[0].userId).toBeNull();
    expect(r.top_users).toEqual([{ user_id: BOB, calls: 2, input_tokens: 200, output_tokens: 20, cost_usd: null }]);
    expect(r.groups).toEqual([
      { group_id: GROUP, name: 'Interns', users: 3, calls: 3, input_tokens: 300, output_tokens: 30, cost_usd: 1.5 },
      { group_id: null, name: null, users: 1, calls: 1, input_tokens: 100, output_tokens: 10, cost_usd: null },
    ]);
  });

  it("reads the groups only for an admin's overview of every user", async () => {
    const { repo, groupScopes } = fakeRepo();
    const range = { from: '2026-01-01', until: '2026-01-02', top: 5 };
    await new UsageReportService(repo).report({ actor: actor(ALICE, 'admin'), user_id: BOB, ...range });
    await new UsageReportService(repo).report({ actor: actor(ALICE, 'user'), user_id: ALICE, ...range });
    expect(groupScopes).toEqual([]);
    await new UsageReportService(repo).report({ actor: actor(ALICE, 'admin'), user_id: null, ...range });
    expect(groupScopes).toEqual([{ userId: null, from: '2026-01-01', until: '2026-01-02' }]);
  });

  it('refuses a range the gateway would have refused (defence in depth)', async () => {
    const svc = new UsageReportService(fakeRepo().repo);
    for (const [from, until] of [
      ['2026-01-02', '2026-01-01'],
      ['2025-01-01', '2026-01-03'],
    ])
      await expect(
        svc.report({ actor: actor(ALICE, 'admin'), user_id: null, from, until, top: 1 }),
      ).rejects.toMatchObject({
        body: { code: 'invalid_input', field: 'until' },
      });
  });

  it('lists the days of a range across month, year and leap day', () => {
    expect(daysOf('2024-02-28', '2024-03-02')).toEqual(['2024-02-28', '2024-02-29', '2024-03-01']);
    expect(daysOf('2025-12-31', '2026-01-01')).toEqual(['2025-12-31']);
    expect(daysOf('2025-01-01', '2026-01-01')).toHaveLength(365);
  });
});
