// docs/approval.md's read-only table and runners table are generated from the program table
// (apps/approval-service/src/rules/programs.ts) by catalogueMarkdown() and runnersMarkdown():
// this fails when the table changed and the page was not updated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogueMarkdown, runnersMarkdown } from '../../apps/approval-service/src/rules/read-only-catalogue';

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
    const page = readFileSync(join(__dirname, '../../docs/approval.md'), 'utf8');
    const start = page.indexOf(begin);
    const end = page.indexOf(endMarker);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    // When this fails: paste the output of the renderer between the markers.
    expect(page.slice(start + begin.length, end).trim()).toBe(render());
  });
});
