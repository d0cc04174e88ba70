// docs/approval.md's read-only table is generated from READ_ONLY_CATALOGUE by catalogueMarkdown():
// this fails when the catalogue changed and the page was not updated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { catalogueMarkdown } from '../../apps/approval-service/src/rules/read-only-catalogue';

const BEGIN = '<!-- read-only catalogue: generated from apps/approval-service/src/rules/read-only-catalogue.ts -->';
const END = '<!-- end of read-only catalogue -->';

describe('docs/approval.md, read-only catalogue', () => {
  it('shows the catalogue exactly as catalogueMarkdown() renders it', () => {
    const page = readFileSync(join(__dirname, '../../docs/approval.md'), 'utf8');
    const start = page.indexOf(BEGIN);
    const end = page.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    // When this fails: paste the output of catalogueMarkdown() between the markers.
    expect(page.slice(start + BEGIN.length, end).trim()).toBe(catalogueMarkdown());
  });
});
