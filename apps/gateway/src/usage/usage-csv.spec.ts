import fc from 'fast-check';
import type { UsageReport } from '@skald/contracts';
import { neutralizeFormula, usageCsv } from './usage-csv';

const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : 39;

/** RFC 4180 read back, written here independently of the writer: records of fields. */
function parseCsv(text: string): string[][] {
  const out: string[][] = [];
  let row: string[] = [];
  let cell = '';
  let quoted = false;
  const endCell = () => {
    row.push(cell);
    cell = '';
  };
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (quoted) {
      if (c === '"' && text[i + 1] === '"') {
        cell += '"';
        i++;
      } else if (c === '"') quoted = false;
      else cell += c;
    } else if (c === '"') quoted = true;
    else if (c === ',') endCell();
    else if (c === '\r' && text[i + 1] === '\n') {
      endCell();
      out.push(row);
      row = [];
      i++;
    } else cell += c;
  }
  if (cell !== '' || row.length > 0) {
    endCell();
    out.push(row);
  }
  return out;
}

const report = (models: Array<{ client: string; model: string }>, groups: string[] = []): UsageReport => ({
  from: '2026-01-01',
  until: '2026-01-02',
  user_id: null,
  totals: { calls: 0, input_tokens: 0, output_tokens: 0, cost_usd: null, failed_calls: 0 },
  days: [{ day: '2026-01-01', calls: 3, input_tokens: 10, output_tokens: 5, cost_usd: null, failed_calls: 1 }],
  models: models.map((m) => ({ ...m, calls: 1, input_tokens: -0, output_tokens: 2, cost_usd: 0.25, failed_calls: 0 })),
  failures: [],
  top_users: [],
  groups: [
    ...groups.map((name, i) => ({
      group_id: `00000000-0000-4000-8000-${String(i).padStart(12, '0')}`,
      name,
      users: 2,
      calls: 4,
      input_tokens: 40,
      output_tokens: 8,
      cost_usd: 0.5,
    })),
    { group_id: null, name: null, users: 1, calls: 1, input_tokens: 10, output_tokens: 2, cost_usd: null },
  ],
});

const hostile = fc.oneof(
  fc.string({ unit: 'grapheme', maxLength: 20 }),
  fc.constantFrom(
    '=HYPERLINK("http://x")',
    '+1+1',
    '-2',
    '@SUM(A1)',
    '\t=1',
    '\r=1',
    'a,b',
    'say "hi"',
    'l1\r\nl2',
    "'=x",
  ),
  fc.tuple(fc.constantFrom('=', '+', '-', '@', '\t', '\r', ''), fc.string({ maxLength: 10 })).map(([a, b]) => a + b),
);

describe('usage CSV', () => {
  it('reads back cell for cell, and no text cell starts a formula', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ client: hostile, model: hostile }), { maxLength: 6 }), (models) => {
        const rows = parseCsv(usageCsv(report(models), 'model'));
        expect(rows[0]).toEqual([
          'client',
          'model',
          'calls',
          'input_tokens',
          'output_tokens',
          'cost_usd',
          'failed_calls',
        ]);
        expect(rows).toHaveLength(models.length + 1);
        models.forEach((m, i) => {
          expect(rows[i + 1]).toEqual([
            neutralizeFormula(m.client),
            neutralizeFormula(m.model),
            '1',
            '0',
            '2',
            '0.25',
            '0',
          ]);
          for (const cell of rows[i + 1].slice(0, 2)) expect(cell).not.toMatch(/^[=+\-@\t\r]/);
        });
      }),
      { seed, numRuns: 3000 },
    );
  });

  it('by group: every group named (hostile names neutralised), the ungrouped users last', () => {
    fc.assert(
      fc.property(fc.array(hostile, { maxLength: 6 }), (names) => {
        const rows = parseCsv(usageCsv(report([], names), 'group'));
        expect(rows[0]).toEqual(['group_id', 'group', 'users', 'calls', 'input_tokens', 'output_tokens', 'cost_usd']);
        expect(rows).toHaveLength(names.length + 2);
        names.forEach((n, i) => {
          expect(rows[i + 1].slice(1)).toEqual([neutralizeFormula(n), '2', '4', '40', '8', '0.5']);
          expect(rows[i + 1][1]).not.toMatch(/^[=+\-@\t\r]/);
        });
        expect(rows[names.length + 1]).toEqual(['', '(no group)', '1', '1', '10', '2', '']);
      }),
      { seed, numRuns: 1000 },
    );
  });

  it('writes numbers as numbers and a missing cost as an empty cell', () => {
    expect(usageCsv(report([]), 'day')).toBe(
      'day,calls,input_tokens,output_tokens,cost_usd,failed_calls\r\n2026-01-01,3,10,5,,1\r\n',
    );
    expect(neutralizeFormula('-5')).toBe("'-5");
    expect(neutralizeFormula('a=1')).toBe('a=1');
  });
});
