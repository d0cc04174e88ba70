// The zod-free route table is generated from ROUTES (scripts/gen-route-table.js): rendered here from the sources
// and compared with the file, so a route added, removed or changed fails until the file is regenerated.
import { readFileSync } from 'node:fs';
import { ROUTE_TABLE } from './route-table';
import { OPERATION_IDS, ROUTES, type RouteDef } from './routes';

interface Generator {
  ROUTE_TABLE_TS: string;
  renderTable(routes: unknown): string;
}
// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../../scripts/gen-route-table.js') as Generator;

describe('route-table.ts', () => {
  it('is what the generator makes of ROUTES', () => {
    expect(readFileSync(generator.ROUTE_TABLE_TS, 'utf8')).toBe(generator.renderTable(ROUTES));
  });

  it('has every operation with its method, path and the kinds of its body and answer', () => {
    expect(Object.keys(ROUTE_TABLE).sort()).toEqual([...OPERATION_IDS].sort());
    for (const op of OPERATION_IDS) {
      const r: RouteDef = ROUTES[op];
      const w = ROUTE_TABLE[op];
      expect([op, w.method, w.path]).toEqual([op, r.method.toUpperCase(), r.path]);
      expect([op, 'body' in w ? w.body : undefined]).toEqual([
        op,
        r.body === undefined ? undefined : r.body === 'multipart' ? 'multipart' : 'json',
      ]);
      if (r.response.schema) expect([op, w.response]).toEqual([op, 'json']);
      if (r.response.status === 204) expect([op, w.response]).toEqual([op, 'none']);
    }
  });

  it('every operation whose query pages (`page` or `before`) says how it pages, and only those', () => {
    for (const op of OPERATION_IDS) {
      const r: RouteDef = ROUTES[op];
      const shape = r.query?.shape ?? {};
      const pages = 'page' in shape || 'before' in shape;
      expect([op, r.paging !== undefined]).toEqual([op, pages]);
      if (r.paging?.by === 'page') expect([op, 'page' in shape]).toEqual([op, true]);
      if (r.paging?.by === 'before') expect([op, 'before' in shape]).toEqual([op, true]);
    }
  });
});
