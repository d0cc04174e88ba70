import fc from 'fast-check';
import type { SessionExport } from '@skald/contracts';
import { exportFilename, toMarkdown } from './conversation-export';

const SEED = Number(process.env.FC_SEED ?? Date.now() % 2 ** 31);

const doc = (userText: string, answer = 'An **answer**.'): SessionExport => ({
  session: {
    id: '00000000-0000-4000-8000-000000000001',
    title: 'A title',
    source: 'web',
    agent_id: 'main',
    created_at: '2026-12-01T10:00:00.000Z',
  },
  messages: [
    {
      id: '00000000-0000-4000-8000-000000000002',
      role: 'user',
      content: userText,
      created_at: '2026-12-01T10:00:01.000Z',
    },
    {
      id: '00000000-0000-4000-8000-000000000003',
      role: 'assistant',
      content: answer,
      created_at: '2026-12-01T10:00:02.000Z',
      tool_calls: [
        {
          id: '00000000-0000-4000-8000-000000000004',
          name: 'read_file',
          arguments: { path: 'a.txt' },
          status: 'done',
          result: 'x',
          label_short: 'read_file a.txt',
          path: 'a.txt',
        },
      ],
    },
  ],
});

describe('conversation export', () => {
  beforeAll(() => console.log(`export property seed ${SEED} (replay: FC_SEED=${SEED})`));

  it('Markdown: a heading per message, the answer as written, its tool calls listed', () => {
    const md = toMarkdown(doc('hello there'));
    expect(md).toContain('# A title');
    expect(md).toMatch(/## You \(2026-12-01T10:00:01.000Z\)\n\n```text\nhello there\n```/);
    expect(md).toContain('## Assistant (2026-12-01T10:00:02.000Z)\n\nAn **answer**.');
    expect(md).toContain('- tool `read_file` (done): {"path":"a.txt"}');
  });

  it('nothing a user typed can close the fence around it or become a heading of the document', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom('`', '```', '````', '\n', '# ', '## You', 'a', ' ', '~~~'), { maxLength: 40 }),
        (parts) => {
          const text = parts.join('');
          const md = toMarkdown(doc(text));
          const start = md.indexOf('## You');
          const open = md.slice(start).split('\n')[2];
          const fence = open.replace(/text$/, '');
          expect(fence).toMatch(/^`{3,}$/);
          const body = md.slice(md.indexOf(open) + open.length + 1);
          // the first line that is exactly the fence closes the block right after the user's text
          expect(body.startsWith(`${text}\n${fence}\n`)).toBe(true);
          expect(text.includes(fence)).toBe(false);
        },
      ),
      { seed: SEED, numRuns: 3_000 },
    );
  });

  it('file names are ASCII letters, digits and dashes whatever the title', () => {
    expect(exportFilename('Trip to Lisbon — day 1', '2026-12-01T10:00:00.000Z', 'md')).toBe(
      'skald-trip-to-lisbon-day-1-2026-12-01.md',
    );
    expect(exportFilename(null, '2026-12-01T10:00:00.000Z', 'json')).toBe('skald-conversation-2026-12-01.json');
    fc.assert(
      fc.property(fc.option(fc.string({ unit: 'binary', maxLength: 300 })), (title) => {
        expect(exportFilename(title, '2026-12-01T10:00:00.000Z', 'md')).toMatch(
          /^skald-[a-z0-9]+(-[a-z0-9]+)*-2026-12-01\.md$/,
        );
      }),
      { seed: SEED, numRuns: 5_000 },
    );
  });
});
