import { mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';

/** Where the attack suite's figures go: `test-results/` at the repository root. */
const RESULTS = resolve(__dirname, '../../../test-results');

/**
 * Records one section's figures of an attack-suite report and rewrites the report as the sum of
 * every section recorded so far: `test-results/attack-suite-<suite>.json` holds the totals
 * (`{"patterns": N, "over_bound": 0}`), `test-results/attack-suite-<suite>/<section>.json` each part.
 * Several test processes may record sections of one suite; each rewrite sums what is on disk.
 */
export function recordAttackSuite(suite: string, section: string, figures: Record<string, number>): void {
  const dir = join(RESULTS, `attack-suite-${suite}`);
  mkdirSync(dir, { recursive: true });
  writeAtomically(join(dir, `${section}.json`), JSON.stringify(figures));
  const totals: Record<string, number> = {};
  for (const name of readdirSync(dir).filter((n) => n.endsWith('.json'))) {
    let part: unknown;
    try {
      part = JSON.parse(readFileSync(join(dir, name), 'utf8'));
    } catch {
      continue; // a section being rewritten right now: its writer sums again after it
    }
    if (typeof part !== 'object' || part === null) continue;
    for (const [key, value] of Object.entries(part)) {
      if (typeof value === 'number') totals[key] = (totals[key] ?? 0) + value;
    }
  }
  writeAtomically(join(RESULTS, `attack-suite-${suite}.json`), JSON.stringify(totals));
}

function writeAtomically(path: string, text: string): void {
  const tmp = `${path}.${process.pid}.tmp`;
  writeFileSync(tmp, `${text}\n`);
  renameSync(tmp, path);
}
