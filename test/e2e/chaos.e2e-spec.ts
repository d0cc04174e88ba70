import { ROOT } from '../support/db';
import { chaosOptionsFromEnv } from '../chaos/options';
import { figuresLine, runChaos } from '../chaos/chaos';

const opts = chaosOptionsFromEnv(process.env);
// The run, its setup and its settling (up to ~4 minutes after the last fault) and the checks.
jest.setTimeout(opts.durationMs + 8 * 60_000);

/**
 * Chaos: conversations with side-effecting tools, approvals, sub-agents and a cron job on two
 * session workers, while seeded faults hit every app, NATS, Redis and Postgres (private instances).
 * In `npm test` a short run (test/chaos/options.ts); `npm run chaos` runs a long one.
 * The seed is printed first (replay: `npm run chaos -- --seed N`).
 */
describe('chaos', () => {
  it('every accepted message once with an outcome, no side effect twice, replay equal to live, nothing stuck', async () => {
    process.stdout.write(`chaos seed=${opts.seed} (replay: npm run chaos -- --seed ${opts.seed})\n`);
    const report = await runChaos({
      ...opts,
      root: ROOT,
      say: process.env.CHAOS_VERBOSE === '1' ? (l) => process.stdout.write(`${l}\n`) : undefined,
    });
    process.stdout.write(`${figuresLine(report)}\n`);
    expect(report.violations).toEqual([]);
    // The run did what it claims: messages were accepted and faults injected.
    expect(report.accepted).toBeGreaterThan(0);
    expect(Object.values(report.faults).reduce((a, b) => a + b, 0)).toBeGreaterThan(0);
  });
});
