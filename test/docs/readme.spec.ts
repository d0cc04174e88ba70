// The README's statements about what `npm start` and `npm test` need, checked against the code that decides it.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';

const ROOT = path.resolve(__dirname, '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const OPERATIONS = readFileSync(path.join(ROOT, 'docs', 'operations.md'), 'utf8');

// eslint-disable-next-line @typescript-eslint/no-require-imports
const stack = require(path.join(ROOT, 'scripts/lib-stack.js')) as {
  APP_PORTS: Record<string, number>;
  appPortVar(app: string): string;
  privateRedisConfig(o: { port: number; dir: string; password: string }): string;
};

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
    e.isDirectory()
      ? ['node_modules', 'dist'].includes(e.name)
        ? []
        : sources(path.join(dir, e.name))
      : /\.(ts|tsx|js)$/.test(e.name)
        ? [path.join(dir, e.name)]
        : [],
  );
}

describe('README.md: what each service needs at run time', () => {
  it('says nothing uses JetStream, and no app or library does', () => {
    const uses = [...sources(path.join(ROOT, 'apps')), ...sources(path.join(ROOT, 'libs'))].filter((f) =>
      /\bjetstream(Manager)?\(|@nats-io\/jetstream|JetStreamClient/.test(readFileSync(f, 'utf8')),
    );
    expect(uses.map((f) => path.relative(ROOT, f))).toEqual([]);
    expect(README).toContain('plain NATS 2 (nothing uses JetStream)');
    expect(README).not.toMatch(/NATS with JetStream|JetStream must/);
    expect(OPERATIONS).not.toMatch(/JetStream must be enabled/);
  });

  it("states Redis' noeviction policy, which the private Redis of npm start runs with", () => {
    expect(README).toMatch(/\| Redis +\|[^\n]*`maxmemory-policy noeviction`/);
    expect(stack.privateRedisConfig({ port: 1, dir: '/d', password: 'p' })).toContain('maxmemory-policy noeviction');
  });

  it("names every app's port variable and default that npm start uses", () => {
    for (const app of Object.keys(stack.APP_PORTS)) expect(README).toContain(`\`${stack.appPortVar(app)}\``);
    expect(README).toContain(`\`PORT_GATEWAY\` (${stack.APP_PORTS.gateway})`);
    const others = Object.entries(stack.APP_PORTS)
      .filter(([a]) => a !== 'gateway')
      .map(([, p]) => p)
      .sort();
    expect(README).toContain(`(${others[0]}–${others[others.length - 1]})`);
  });

  it('documents npm run dev, and the scheduler is no skeleton any more', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      scripts: Record<string, string>;
    };
    expect(pkg.scripts.dev).toBe('node scripts/dev.js --watch');
    expect(README).toContain('`npm run dev`');
    for (const f of readdirSync(path.join(ROOT, 'docs')).filter((n) => n.endsWith('.md')))
      expect(readFileSync(path.join(ROOT, 'docs', f), 'utf8')).not.toMatch(/scheduler is a skeleton/i);
  });
});

describe("README.md's first screen: the three ways in", () => {
  const firstScreen = README.slice(0, README.indexOf('What each backing service must be'));

  it('links docs that exist, for the CLI, the SDK and the OpenAI-compatible endpoint', () => {
    const docs = [...firstScreen.matchAll(/`(docs\/[a-z-]+\.md)`/g)].map((m) => m[1]);
    expect(docs).toEqual(expect.arrayContaining(['docs/cli.md', 'docs/sdk.md', 'docs/openai-compatible.md']));
    for (const d of docs) expect(readFileSync(path.join(ROOT, d), 'utf8').length).toBeGreaterThan(0);
  });

  it('names the CLI by its bin and the exit code its run gives when a call waits for a human', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { EXIT } = require(path.join(ROOT, 'apps/cli/src/errors.ts')) as { EXIT: Record<string, number> };
    const cli = JSON.parse(readFileSync(path.join(ROOT, 'apps/cli/package.json'), 'utf8')) as {
      bin: Record<string, string>;
    };
    expect(Object.keys(cli.bin)).toEqual(['skald']);
    expect(firstScreen).toContain(`exit code ${EXIT.needsHuman}: a call waits for a human`);
    expect(readFileSync(path.join(ROOT, 'docs/cli.md'), 'utf8')).toContain(`${EXIT.needsHuman}`);
  });

  it('names the SDK by its package name and the endpoint by its route', () => {
    const sdk = JSON.parse(readFileSync(path.join(ROOT, 'libs/client/package.json'), 'utf8')) as { name: string };
    expect(firstScreen).toContain(`\`${sdk.name}\``);
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const { ROUTES } = require(path.join(ROOT, 'libs/contracts/src/routes.ts')) as {
      ROUTES: Record<string, { method: string; path: string }>;
    };
    const completions = ROUTES['createChatCompletion'];
    expect(firstScreen).toContain(`${completions.method.toUpperCase()} ${completions.path}`);
  });
});
