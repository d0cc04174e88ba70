// docs/approval.md's read-only table and runners table are generated from the program table
// (apps/approval-service/src/rules/programs.ts) by catalogueMarkdown() and runnersMarkdown():
// this fails when the table changed and the page was not updated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogueMarkdown, runnersMarkdown } from '../../apps/approval-service/src/rules/read-only-catalogue';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the generators' CommonJS helper
const { formatWithPrettier } = require('../../scripts/lib-doc-section') as {
  formatWithPrettier: (text: string, filepath: string) => string;
};

const TABLES: Array<[string, string, () => string]> = [
  [
    '<!-- read-only catalogue: generated from apps/approval-service/src/rules/read-only-catalogue.ts -->',
    '<!-- end of read-only catalogue -->',
    catalogueMarkdown,
  ],
  [
    '<!-- runners: generated from apps/approval-service/src/rules/programs.ts by runnersMarkdown() -->',
    '<!-- end of runners -->',
    runnersMarkdown,
  ],
];

describe('docs/approval.md, read-only catalogue and runners', () => {
  it.each(TABLES)('shows %s exactly as generated', (begin, endMarker, render) => {
    const file = join(__dirname, '../../docs/approval.md');
    const page = readFileSync(file, 'utf8');
    const start = page.indexOf(begin);
    const end = page.indexOf(endMarker);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    // When this fails: paste the output of the renderer between the markers and run Prettier on
    // the page (lint checks it; the rendering is compared as Prettier writes it).
    expect(page.slice(start + begin.length, end).trim()).toBe(formatWithPrettier(render(), file).trim());
  });
});
