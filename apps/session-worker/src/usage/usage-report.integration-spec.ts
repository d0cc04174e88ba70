import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { LlmUsageRepository } from '../llm/llm-usage.repository';
import { UsageReportRepository } from './usage-report.repository';
import { UsageReportService } from './usage-report.service';

jest.setTimeout(60_000);

/**
 * The rollup trigger and the report over real Postgres. Rows are dated in a year of their own
 * (a random one far ahead) so the overview of every user sees only this test's rows.
 */
describe('usage report over llm_usage_daily and llm_call_failures', () => {
  let ds: DataSource;
  const year = 2100 + Math.floor(Math.random() * 800);
  const alice = randomUUID();
  const bob = randomUUID();

  beforeAll(async () => {
    ds = new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, extra: { max: 2 } });
    await ds.initialize();
    const row = (user: string, at: string, client: string, input: number, cost: number | null) =>
      ds.query(
        `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens, cost_usd, created_at)
         VALUES ($1, 'round', $2, $2 || '-model', $3, 10, $4, $5)`,
        [user, client, input, cost, at],
      );
    // alice: two calls on Jan 1 (one just before midnight UTC), one on Jan 3; bob: one unpriced call
    await row(alice, `${year}-01-01T00:00:00Z`, 'gpt', 100, 0.5);
    await row(alice, `${year}-01-01T23:59:59.999Z`, 'gpt', 200, 0.25);
    await row(alice, `${year}-01-03T12:00:00Z`, 'local', 1000, null);
    await row(bob, `${year}-01-02T00:00:00Z`, 'gpt', 5000, null);
    // one statement, two rows of one day: summed once each
    await ds.query(
      `INSERT INTO llm_usage (user_id, purpose, client, model, input_tokens, output_tokens, created_at)
       VALUES ($1, 'round', 'gpt', 'gpt-model', 1, 1, $2), ($1, 'round', 'gpt', 'gpt-model', 2, 2, $2)`,
      [bob, `${year}-01-02T01:00:00Z`],
    );
    await new LlmUsageRepository(ds).recordFailure({
      userId: alice,
      sessionId: null,
      purpose: 'round',
      client: 'flaky',
      model: 'flaky-model',
      errorKind: 'timeout',
    });
    await ds.query(`UPDATE llm_call_failures SET created_at = $2 WHERE user_id = $1`, [
      alice,
      `${year}-01-02T05:00:00Z`,
    ]);
  });
  afterAll(() => ds.destroy());

  const service = () => new UsageReportService(new UsageReportRepository(ds));
  const range = { from: `${year}-01-01`, until: `${year}-01-04` };

  it('rolls each call into its UTC day, user, client and model', async () => {
    const rows = await ds.query<Array<{ day: string; client: string; calls: string; input_tokens: string }>>(
      `SELECT to_char(day, 'YYYY-MM-DD') AS day, client, calls, input_tokens, priced_calls, cost_usd
         FROM llm_usage_daily WHERE user_id = ANY($1) ORDER BY day, client`,
      [[alice, bob]],
    );
    expect(rows).toEqual([
      { day: `${year}-01-01`, client: 'gpt', calls: '2', input_tokens: '300', priced_calls: '2', cost_usd: '0.750000' },
      {
        day: `${year}-01-02`,
        client: 'gpt',
        calls: '3',
        input_tokens: '5003',
        priced_calls: '0',
        cost_usd: '0.000000',
      },
      {
        day: `${year}-01-03`,
        client: 'local',
        calls: '1',
        input_tokens: '1000',
        priced_calls: '0',
        cost_usd: '0.000000',
      },
    ]);
  });

  it("gives a user their own days, models and failed calls, and nobody else's", async () => {
    const r = await service().report({ actor: { userId: alice, role: 'user' }, user_id: alice, ...range, top: 0 });
    expect(r.days.map((d) => [d.day, d.calls, d.input_tokens, d.cost_usd, d.failed_calls])).toEqual([
      [`${year}-01-01`, 2, 300, 0.75, 0],
      [`${year}-01-02`, 0, 0, null, 1],
      [`${year}-01-03`, 1, 1000, null, 0],
    ]);
    expect(r.totals).toEqual({ calls: 3, input_tokens: 1300, output_tokens: 30, cost_usd: 0.75, failed_calls: 1 });
    expect(r.models.map((m) => `${m.client}:${m.calls}:${m.failed_calls}`)).toEqual([
      'local:1:0',
      'gpt:2:0',
      'flaky:0:1',
    ]);
    expect(r.failures).toEqual([
      { day: `${year}-01-02`, client: 'flaky', model: 'flaky-model', error_kind: 'timeout', calls: 1 },
    ]);
    expect(r.top_users).toEqual([]);
  });

  it('sums usage per group by current membership: each user once per group, the ungrouped apart', async () => {
    const carol = randomUUID();
    const groupA = randomUUID();
    const groupB = randomUUID();
    await ds.query(`INSERT INTO groups (id, name, source) VALUES ($1, $3, 'admin'), ($2, $4, 'admin')`, [
      groupA,
      groupB,
      `usage-a-${year}-${groupA}`,
      `usage-b-${year}-${groupB}`,
    ]);
    // alice in both groups (in A twice: by an admin and by the identity provider), bob in B; carol has no usage
    await ds.query(
      `INSERT INTO group_members (group_id, user_id, source)
       VALUES ($1, $3, 'admin'), ($1, $3, 'idp'), ($2, $3, 'admin'), ($2, $4, 'admin'), ($1, $5, 'admin')`,
      [groupA, groupB, alice, bob, carol],
    );
    try {
      const r = await service().report({
        actor: { userId: randomUUID(), role: 'admin' },
        user_id: null,
        ...range,
        top: 0,
      });
      const mine = r.groups.filter((g) => g.group_id === groupA || g.group_id === groupB);
      expect(mine.map((g) => [g.group_id, g.users, g.calls, g.input_tokens, g.cost_usd])).toEqual([
        [groupB, 2, 6, 6303, 0.75],
        [groupA, 1, 3, 1300, 0.75],
      ]);
      // alice and bob are in groups now: this range's ungrouped row (if any) counts neither
      const none = r.groups.find((g) => g.group_id === null);
      expect(none?.calls ?? 0).toBe(0);
    } finally {
      await ds.query(`DELETE FROM groups WHERE id = ANY($1)`, [[groupA, groupB]]);
    }
  });

  it("gives an admin every user's usage with the top users by tokens", async () => {
    const r = await service().report({
      actor: { userId: randomUUID(), role: 'admin' },
      user_id: null,
      ...range,
      top: 1,
    });
    expect(r.totals.calls).toBe(6);
    expect(r.top_users).toEqual([{ user_id: bob, calls: 3, input_tokens: 5003, output_tokens: 13, cost_usd: null }]);
  });
});
