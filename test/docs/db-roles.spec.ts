// docs/operations.md's "Database roles" table is generated from SERVICE_TABLE_GRANTS by
// scripts/gen-db-roles-reference.js: this fails when the map changed and the page was not regenerated.
import { readFileSync } from 'node:fs';
import * as roles from '../../libs/persistence/src/service-roles';

interface Generator {
  OPERATIONS_MD: string;
  renderRoles(r: typeof roles): string;
  replaceSection(markdown: string, section: string): string;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../scripts/gen-db-roles-reference.js') as Generator;

describe('docs/operations.md, database roles', () => {
  it('lists every grant of SERVICE_TABLE_GRANTS, as scripts/gen-db-roles-reference.js renders it', () => {
    const page = readFileSync(generator.OPERATIONS_MD, 'utf8');

    // When this fails: `npx tsc -b libs/persistence && node scripts/gen-db-roles-reference.js`, and commit the page.
    expect(page).toBe(generator.replaceSection(page, generator.renderRoles(roles)));
    expect(page).toMatch(/^\| `skald_scheduler` +\| scheduler +\| `SKALD_DB_PASSWORD_SCHEDULER` +\| `job_runs` +\|/m);
  });
});
