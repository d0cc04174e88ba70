// The SDK as a developer outside this repository gets it: `npm pack` of @skald/client and of the
// @skald/contracts it depends on (with zod, their one dependency, packed from node_modules) installs into a fresh
// project offline from those tarballs alone (an empty cache, a registry that does not answer), type-checks with
// tsc from Node ESM (a wrong call does not compile) and runs.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';

const ROOT = path.join(__dirname, '..', '..');
const bin = (name: string) => path.join(ROOT, 'node_modules', '.bin', name);
const run = (cmd: string, args: string[], cwd: string) =>
  execFileSync(cmd, args, {
    cwd,
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, npm_config_registry: 'http://127.0.0.1:9/', npm_config_update_notifier: 'false' },
  });

jest.setTimeout(180_000);

describe('@skald/client packed', () => {
  let dir: string;
  let tarballs: string[];

  beforeAll(() => {
    // the packages as the suite's global setup built them
    dir = mkdtempSync(path.join(tmpdir(), 'skald-pack-'));
    run(
      'npm',
      [
        'pack',
        '--pack-destination',
        dir,
        path.join(ROOT, 'node_modules', 'zod'),
        path.join(ROOT, 'libs', 'contracts'),
        path.join(ROOT, 'libs', 'client'),
      ],
      dir,
    );
    tarballs = readdirSync(dir).filter((f) => f.endsWith('.tgz'));
  });
  afterAll(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  it('the tarballs hold the built package only: no sources, specs or build state', () => {
    expect(tarballs.sort()).toEqual(['skald-client-0.1.0.tgz', 'skald-contracts-0.1.0.tgz', 'zod-4.6.7.tgz']);
    for (const t of ['skald-client-0.1.0.tgz', 'skald-contracts-0.1.0.tgz']) {
      const files = run('tar', ['tzf', t], dir).trim().split('\n');
      expect(files).toContain('package/dist/index.js');
      expect(files).toContain('package/dist/index.d.ts');
      expect(files.filter((f) => !/^package\/(dist\/|package\.json$|README\.md$)/.test(f))).toEqual([]);
      expect(files.filter((f) => /\.spec\.|tsbuildinfo|testing/.test(f))).toEqual([]);
    }
  });

  it('a fresh Node ESM project installs them offline, type-checks a typed call with tsc and runs it', () => {
    const app = path.join(dir, 'app');
    run('mkdir', ['-p', app], dir);
    writeFileSync(path.join(app, 'package.json'), JSON.stringify({ name: 'app', private: true, type: 'module' }));
    run(
      'npm',
      [
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--cache',
        path.join(dir, 'empty-cache'),
        ...tarballs.map((t) => path.join(dir, t)),
      ],
      app,
    );
    writeFileSync(
      path.join(app, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          lib: ['ES2023', 'DOM'],
          types: [],
          outDir: 'out',
          skipLibCheck: false,
        },
        include: ['main.ts'],
      }),
    );
    writeFileSync(
      path.join(app, 'main.ts'),
      `import { SkaldClient, ROUTE_TABLE, type OperationId, type ServerFrame } from '@skald/client';
import { OPERATION_IDS } from '@skald/contracts';
import { readServerFrame } from '@skald/contracts/server-frame';

const calls: string[] = [];
const client = new SkaldClient({
  baseUrl: 'http://gw',
  token: 't',
  fetch: async (url, init) => {
    calls.push(\`\${init.method} \${url} \${String(init.body)}\`);
    return new Response(JSON.stringify({ id: 'x', title: 'Renamed' }), { headers: { 'content-type': 'application/json' } });
  },
});
const renamed = await client.call('renameSession', { params: { id: 'x' }, body: { title: 'Renamed' } });
const title: string = renamed.title;
// @ts-expect-error the body of renameSession is {title}
await client.call('renameSession', { params: { id: 'x' }, body: { name: 'no' } });
const ops: OperationId[] = OPERATION_IDS;
const frame: ServerFrame | null = readServerFrame({ type: 'pong' });
console.log(JSON.stringify({ title, calls: calls.slice(0, 1), same: ops.length === Object.keys(ROUTE_TABLE).length, frame }));
`,
    );
    run(bin('tsc'), ['-p', '.'], app);
    const out = run(process.execPath, ['out/main.js'], app);
    expect(JSON.parse(out)).toEqual({
      title: 'Renamed',
      calls: ['PATCH http://gw/api/sessions/x {"title":"Renamed"}'],
      same: true,
      frame: { type: 'pong' },
    });
  });
});
