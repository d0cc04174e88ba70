import fc from 'fast-check';
import { USAGE_MAX_DAYS, usageDays, type Actor } from '@skald/contracts';
import { ApiError } from '../http/api-error';
import { UsageController } from './usage.controller';
import type { UsageService } from './usage.service';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 39;
const admin: Actor = { userId: '00000000-0000-4000-8000-00000000000a', role: 'admin' };

/** A controller over a service that remembers what it was asked. */
function controller() {
  const asked: Array<{ from: string; until: string; top?: number }> = [];
  const report = (_a: Actor, from: string, until: string, top?: number) => {
    asked.push({ from, until, top });
    return Promise.resolve({ days: [], models: [], failures: [], top_users: [], groups: [] } as never);
  };
  const svc = { mine: report, overview: report, everyUser: report, ofUser: report } as unknown as UsageService;
  return { c: new UsageController(svc), asked };
}

/** Query strings as Express parses them: strings, arrays of strings, nested objects. */
const value = fc.oneof(
  fc.string({ maxLength: 12 }),
  fc
    .integer({ min: Date.UTC(1990, 0, 1), max: Date.UTC(2100, 0, 1) })
    .map((t) => new Date(t).toISOString().slice(0, 10)),
  fc.constantFrom('2026-02-29', '2026-13-01', '', '1', '100', '101', '-1', '1e2', 'day', 'user', 'model', 'failure'),
  fc.array(fc.string({ maxLength: 4 }), { maxLength: 2 }),
  fc.dictionary(fc.string({ maxLength: 3 }), fc.string({ maxLength: 3 }), { maxKeys: 2 }),
);
const query = fc.dictionary(
  fc.oneof(
    fc.constantFrom('from', 'until', 'top', 'by', 'user_id', '__proto__', 'constructor'),
    fc.string({ maxLength: 6 }),
  ),
  value,
  { maxKeys: 5 },
);

describe('UsageController: every query parameter is checked', () => {
  it('a hostile query is a 400 naming a field, or a range of 1..366 days that reaches the service', async () => {
    await fc.assert(
      fc.asyncProperty(
        query,
        fc.constantFrom<Array<'mine' | 'overview' | 'export'>>('mine', 'overview', 'export'),
        async (q, route) => {
          const { c, asked } = controller();
          const res = { setHeader: () => undefined };
          try {
            if (route === 'mine') await c.mine(admin, q);
            else if (route === 'overview') await c.overview(admin, q);
            else await c.export(admin, q, res);
          } catch (e) {
            expect(e).toBeInstanceOf(ApiError);
            expect(e).toMatchObject({ code: 'invalid_input', status: 400 });
            expect((e as ApiError).field).toBeTruthy();
            expect(asked).toEqual([]);
            return;
          }
          expect(asked).toHaveLength(1);
          const days = usageDays(asked[0].from, asked[0].until);
          expect(days >= 1 && days <= USAGE_MAX_DAYS).toBe(true);
        },
      ),
      { seed, numRuns: 3000 },
    );
  });

  it('a user id in the path that is not a UUID is a 404, like a missing user', async () => {
    const { c } = controller();
    let thrown: unknown;
    try {
      await c.ofUser(admin, '../users', { from: '2026-01-01', until: '2026-01-02' });
    } catch (e) {
      thrown = e;
    }
    expect(thrown).toMatchObject({ code: 'not_found', status: 404 });
  });
});
