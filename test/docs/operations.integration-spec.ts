// docs/operations.md's configuration reference is generated from the apps' config schemas by
// scripts/gen-config-reference.js. This checks that the committed page matches what the generator makes of the
// schemas in src/ (so a new variable, a changed default or a reworded doc comment shows up as a failure until
// the page is regenerated), that a variable without a description cannot be documented silently, and that every
// variable the code reads outside the schemas is in the reference too.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { ApprovalConfigSchema } from '../../apps/approval-service/src/config';
import { GatewayConfigSchema } from '../../apps/gateway/src/config';
import { SchedulerConfigSchema } from '../../apps/scheduler/src/config';
import { WorkerConfigSchema } from '../../apps/session-worker/src/config';
import { ToolRunnerConfigSchema } from '../../apps/tool-runner/src/config';
import { BaseConfigSchema } from '../../libs/service-kit/src/config';

interface Schemas {
  base: { shape: Record<string, unknown> };
  apps: Record<string, { shape: Record<string, unknown> }>;
}
interface Generator {
  OPERATIONS_MD: string;
  renderReference(schemas: Schemas): string;
  expectedDocument(markdown: string, section: string): string;
}

const repoRoot = join(__dirname, '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const generator = require('../../scripts/gen-config-reference.js') as Generator;

const schemas: Schemas = {
  base: BaseConfigSchema,
  apps: {
    gateway: GatewayConfigSchema,
    'session-worker': WorkerConfigSchema,
    'approval-service': ApprovalConfigSchema,
    'tool-runner': ToolRunnerConfigSchema,
    scheduler: SchedulerConfigSchema,
  },
};

const page = readFileSync(generator.OPERATIONS_MD, 'utf8');
/** The variable names of the reference's table rows. */
const documented = new Set([...page.matchAll(/^\| `([A-Z][A-Z0-9_]*)` +\|/gm)].map((m) => m[1]));

/** The apps that are clients of the gateway, each documented in its own page. */
const CLIENT_APPS = ['web', 'cli'];

/** The environment variables the given files read (`process.env.X`, `process.env['X']`, `env.X`). */
function envRead(files: string[]): Set<string> {
  const read = new Set<string>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    for (const m of text.matchAll(
      /process\.env\.([A-Z][A-Z0-9_]*)|process\.env\[['"]([A-Z][A-Z0-9_]*)['"]\]|\benv\.([A-Z][A-Z0-9_]*)/g,
    ))
      read.add(m[1] ?? m[2] ?? m[3] ?? '');
  }
  return read;
}

describe('docs/operations.md, configuration reference', () => {
  it('is what scripts/gen-config-reference.js makes of the config schemas', () => {
    const expected = generator.expectedDocument(page, generator.renderReference(schemas));

    // When this fails: `npm run build && node scripts/gen-config-reference.js`, and commit docs/operations.md.
    expect(page).toBe(expected);
  });

  it('lists every variable of every schema, with its default', () => {
    for (const schema of [schemas.base, ...Object.values(schemas.apps)]) {
      for (const name of Object.keys(schema.shape)) expect(documented).toContain(name);
    }
    expect(page).toMatch(/^\| `SKALD_SHUTDOWN_GRACE_MS` +\| `20000` +\|/m);
    expect(page).toMatch(/^\| `SKALD_JWT_SECRET` +\| \*\*required\*\* +\| \*\*Secret\.\*\*/m);
    expect(page).toMatch(/^\| `SKALD_SANDBOX` +\| `bwrap` +\| .*One of `bwrap`, `none`\./m);
  });

  it('refuses a variable that has no description, and takes one from .describe()', () => {
    const undocumented = { ...schemas.apps, gateway: GatewayConfigSchema.extend({ SKALD_NEW_KNOB: z.string() }) };
    const described = {
      ...schemas.apps,
      gateway: GatewayConfigSchema.extend({ SKALD_NEW_KNOB: z.coerce.number().default(3).describe('A new knob.') }),
    };

    expect(() => generator.renderReference({ ...schemas, apps: undocumented })).toThrow(
      /undocumented configuration: SKALD_NEW_KNOB \(apps\/gateway\/src\/config\.ts\)/,
    );
    expect(generator.renderReference({ ...schemas, apps: described })).toContain(
      '| `SKALD_NEW_KNOB` | `3` | A new knob. |',
    );
  });

  it('documents every variable the code reads outside the schemas', () => {
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
        const path = join(dir, e.name);
        if (e.isDirectory())
          return ['node_modules', 'dist', 'testing', 'testing-fixtures'].includes(e.name) ? [] : sources(path);
        return e.name.endsWith('.ts') && !/\.(spec|integration-spec|serial-spec|e2e-spec)\.ts$/.test(e.name)
          ? [path]
          : [];
      });
    // The clients (the web page, the terminal client) are configured where they are documented: docs/web.md, docs/cli.md.
    const roots = [
      ...readdirSync(join(repoRoot, 'apps'))
        .filter((a) => !CLIENT_APPS.includes(a))
        .map((a) => join(repoRoot, 'apps', a, 'src')),
      ...readdirSync(join(repoRoot, 'libs'))
        .filter((l) => l !== 'testing')
        .map((l) => join(repoRoot, 'libs', l, 'src')),
    ];
    const read = envRead(roots.flatMap(sources));
    // PATH is the system's; the sandbox passes it on.
    read.delete('PATH');

    expect(read.size).toBeGreaterThan(0);
    expect([...read].filter((name) => !documented.has(name))).toEqual([]);
  });

  it("documents the terminal client's variables in docs/cli.md", () => {
    const cliSources = readdirSync(join(repoRoot, 'apps/cli/src'), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.spec.ts'))
      .map((f) => join(repoRoot, 'apps/cli/src', f));
    const read = envRead(cliSources);
    const cliDoc = readFileSync(join(repoRoot, 'docs/cli.md'), 'utf8');
    expect([...read].sort()).toEqual(expect.arrayContaining(['SKALD_TOKEN', 'SKALD_URL']));
    expect([...read].filter((name) => !cliDoc.includes(`\`${name}\``) && !cliDoc.includes(`$${name}`))).toEqual([]);
  });
});
