// docs/architecture.md's table of built-in tools is generated from the tool registry by
// builtinToolsMarkdown(): this fails when a tool changed and the page was not updated.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { builtinToolsMarkdown } from '../../libs/contracts/src/tool-registry/docs-table';
// eslint-disable-next-line @typescript-eslint/no-require-imports -- the generators' CommonJS helper
const { formatWithPrettier } = require('../../scripts/lib-doc-section') as {
  formatWithPrettier: (text: string, filepath: string) => string;
};

const BEGIN = '<!-- built-in tools: generated from libs/contracts/src/tool-registry -->';
const END = '<!-- end of built-in tools -->';

describe('docs/architecture.md, built-in tools', () => {
  it('shows the registry exactly as builtinToolsMarkdown() renders it', () => {
    const page = readFileSync(join(__dirname, '../../docs/architecture.md'), 'utf8');
    const start = page.indexOf(BEGIN);
    const end = page.indexOf(END);
    expect(start).toBeGreaterThan(-1);
    expect(end).toBeGreaterThan(start);
    // When this fails: paste the output of builtinToolsMarkdown() between the markers.
    // The page is Prettier-formatted (lint checks it): the rendering is compared as Prettier writes it.
    const pageFile = join(__dirname, '../../docs/architecture.md');
    expect(page.slice(start + BEGIN.length, end).trim()).toBe(
      formatWithPrettier(builtinToolsMarkdown(), pageFile).trim(),
    );
  });
});
