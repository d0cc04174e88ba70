import { Injectable } from '@nestjs/common';
import { usageDays, type UsageReportReply, type UsageReportRequest, type UsageSums } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { UsageReportRepository, type UsageSumsRow } from './usage-report.repository';

const DAY_MS = 86_400_000;

/** Sums from the database (text) to the wire; the cost is null when no call of the set had a price. */
function toSums(r: UsageSumsRow): UsageSums {
  return {
    calls: Number(r.calls),
    input_tokens: Number(r.input_tokens),
    output_tokens: Number(r.output_tokens),
    cost_usd: Number(r.priced_calls) > 0 ? Number(r.cost_usd) : null,
  };
}

/** Every UTC day of `[from, until)`, `YYYY-MM-DD`. */
export function daysOf(from: string, until: string): string[] {
  const start = Date.parse(`${from}T00:00:00Z`);
  return Array.from({ length: usageDays(from, until) }, (_, i) =>
    new Date(start + i * DAY_MS).toISOString().slice(0, 10),
  );
}

const addCost = (a: number | null, b: number | null): number | null => (a === null ? b : b === null ? a : a + b);

/**
 * Usage reports from the ledger. A user reads their own; only an admin reads another user's or
 * every user's (`user_id: null`): anyone else is refused with `forbidden`.
 */
@Injectable()
export class UsageReportService {
  constructor(private readonly repo: UsageReportRepository) {}

  async report(r: UsageReportRequest): Promise<UsageReportReply> {
    if (r.actor.role !== 'admin' && r.user_id !== r.actor.userId)
      throw new RemoteError({ code: 'forbidden', message: "only an admin reads another user's usage" });
    const days = usageDays(r.from, r.until);
    if (!(days >= 1 && days <= 366))
      throw new RemoteError({ code: 'invalid_input', message: 'until: at most 366 days after from', field: 'until' });
    const scope = { userId: r.user_id, from: r.from, until: r.until };
    const [byDay, byModel, failures, top, groups] = await Promise.all([
      this.repo.byDay(scope),
      this.repo.byModel(scope),
      this.repo.failures(scope),
      r.user_id === null && r.top > 0 ? this.repo.topUsers(scope, r.top) : Promise.resolve([]),
      // Groups are an admin's view of everyone: a user's own report names none.
      r.user_id === null ? this.repo.byGroup(scope) : Promise.resolve([]),
    ]);
    const failedOn = new Map<string, number>();
    const failedBy = new Map<string, number>();
    for (const f of failures) {
      failedOn.set(f.day, (failedOn.get(f.day) ?? 0) + f.calls);
      const key = `${f.client}\u0000${f.model}`;
      failedBy.set(key, (failedBy.get(key) ?? 0) + f.calls);
    }
    const sumsOn = new Map(byDay.map((d) => [d.day, toSums(d)]));
    const zero: UsageSums = { calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null };
    const dayRows = daysOf(r.from, r.until).map((day) => ({
      day,
      ...(sumsOn.get(day) ?? zero),
      failed_calls: failedOn.get(day) ?? 0,
    }));
    const models = byModel.map((m) => ({
      client: String(m.client),
      model: String(m.model),
      ...toSums(m),
      failed_calls: failedBy.get(`${String(m.client)}\u0000${String(m.model)}`) ?? 0,
    }));
    // A client and model whose every call failed has no row in the rollup: it is listed with zeros.
    const listed = new Set(models.map((m) => `${m.client}\u0000${m.model}`));
    for (const [key, n] of failedBy) {
      if (listed.has(key)) continue;
      const [client, model] = key.split('\u0000');
      models.push({ client, model, ...zero, failed_calls: n });
    }
    const totals = dayRows.reduce(
      (t, d) => ({
        calls: t.calls + d.calls,
        input_tokens: t.input_tokens + d.input_tokens,
        output_tokens: t.output_tokens + d.output_tokens,
        cost_usd: addCost(t.cost_usd, d.cost_usd),
        failed_calls: t.failed_calls + d.failed_calls,
      }),
      { ...zero, failed_calls: 0 },
    );
    return {
      from: r.from,
      until: r.until,
      user_id: r.user_id,
      totals,
      days: dayRows,
      models,
      failures: failures.map((f) => ({
        day: f.day,
        client: String(f.client),
        model: String(f.model),
        error_kind: String(f.error_kind),
        calls: Number(f.calls),
      })),
      top_users: top.map((u) => ({ user_id: String(u.user_id), ...toSums(u) })),
      groups: groups.map((g) => ({ group_id: g.group_id, name: g.name, users: Number(g.users), ...toSums(g) })),
    };
  }
}
