// The module boundaries of ARCHITECTURE.md / STYLE.md, proven against the real eslint.config.mjs:
// agent-loop imports no infrastructure SDK, an app never imports another app, libs/testing only from tests.
//
// Every probe is linted in memory (ESLint#lintText, nothing is written to disk) by one child process,
// because ESLint loads its flat config with a dynamic import() that Jest's CommonJS VM cannot run.
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import type { Linter } from 'eslint';

const repoRoot = join(__dirname, '..', '..');
const BOUNDARY_RULE = '@nx/enforce-module-boundaries';
const LOOP_FILE = 'libs/agent-loop/src/__probe__.ts';

const BANNED_FROM_AGENT_LOOP = [
  '@nestjs/common',
  '@nestjs/core',
  'typeorm',
  'pg',
  'nats',
  'ioredis',
  'bullmq',
  'openai',
  'zod',
] as const;
const ALLOWED_IN_APPS = ['@nestjs/common', 'openai', 'zod', 'nats'] as const;

function importOf(pkg: string): string {
  return `import * as dep from '${pkg}';\nexport const used = [dep];\n`;
}

interface Probe {
  id: string;
  filePath: string;
  code: string;
}

const probes: Probe[] = [
  ...BANNED_FROM_AGENT_LOOP.map((pkg) => ({ id: `loop:${pkg}`, filePath: LOOP_FILE, code: importOf(pkg) })),
  {
    id: 'loop:nest+openai',
    filePath: LOOP_FILE,
    code: [
      "import { Injectable } from '@nestjs/common';",
      "import OpenAI from 'openai';",
      'export const used = [Injectable, OpenAI];',
      '',
    ].join('\n'),
  },
  { id: 'loop:not-installed', filePath: LOOP_FILE, code: importOf('@nats-io/jetstream') },
  { id: 'loop:workspace-lib', filePath: LOOP_FILE, code: importOf('@skald/contracts') },
  { id: 'loop:relative', filePath: LOOP_FILE, code: importOf('./index') },
  ...ALLOWED_IN_APPS.map((pkg) => ({
    id: `app:${pkg}`,
    filePath: 'apps/session-worker/src/__probe__.ts',
    code: importOf(pkg),
  })),
  { id: 'app:agent-loop', filePath: 'apps/session-worker/src/__probe__.ts', code: importOf('@skald/agent-loop') },
  { id: 'app:other-app', filePath: 'apps/gateway/src/__probe__.ts', code: importOf('@skald/session-worker') },
  { id: 'testing:from-src', filePath: 'apps/gateway/src/__probe__.ts', code: importOf('@skald/testing') },
  { id: 'testing:from-spec', filePath: 'apps/gateway/src/__probe__.spec.ts', code: importOf('@skald/testing') },
];

let results: Record<string, Linter.LintMessage[]>;

beforeAll(() => {
  const run = spawnSync(process.execPath, [join(__dirname, 'lint-texts.mjs')], {
    cwd: repoRoot,
    input: JSON.stringify(probes),
    encoding: 'utf8',
    env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
    maxBuffer: 64 * 1024 * 1024,
    timeout: 120_000,
  });
  if (run.status !== 0) throw new Error(`ESLint probe run failed (${run.status}): ${run.stderr}`);
  const marker = run.stdout.lastIndexOf('@@lint-results@@');
  if (marker < 0) throw new Error(`ESLint probe printed no results: ${run.stdout.slice(0, 500)}`);
  expect(run.stdout).not.toContain('No cached ProjectGraph');
  results = JSON.parse(run.stdout.slice(marker + '@@lint-results@@'.length)) as Record<string, Linter.LintMessage[]>;
}, 150_000);

function messagesOf(id: string): Linter.LintMessage[] {
  const messages = results[id];
  if (!messages) throw new Error(`no lint result for probe ${id}`);
  const fatal = messages.filter((m) => m.fatal);
  if (fatal.length > 0)
    throw new Error(`ESLint could not parse probe ${id}: ${fatal.map((m) => m.message).join('; ')}`);
  return messages;
}

function boundaryErrors(id: string): Linter.LintMessage[] {
  return messagesOf(id).filter((m) => m.ruleId === BOUNDARY_RULE && m.severity === 2);
}

function restrictedImports(id: string): Linter.LintMessage[] {
  return messagesOf(id).filter((m) => m.ruleId?.endsWith('no-restricted-imports') === true && m.severity === 2);
}

describe('libs/agent-loop stays free of infrastructure', () => {
  it.each(BANNED_FROM_AGENT_LOOP)('importing %s from libs/agent-loop is a lint error', (pkg) => {
    const errors = boundaryErrors(`loop:${pkg}`);

    expect(errors.map((e) => [e.line, e.message])).toEqual([
      [1, `A project tagged with "scope:agent-loop" is not allowed to import "${pkg}"`],
    ]);
    expect(restrictedImports(`loop:${pkg}`)[0]?.message).toContain('Add a port');
  });

  it('reports every banned import of one file, each on its own line', () => {
    expect(boundaryErrors('loop:nest+openai').map((e) => [e.line, e.message])).toEqual([
      [1, 'A project tagged with "scope:agent-loop" is not allowed to import "@nestjs/common"'],
      [2, 'A project tagged with "scope:agent-loop" is not allowed to import "openai"'],
    ]);
  });

  it('explains what to do instead, also for a banned package that is not installed', () => {
    const restricted = restrictedImports('loop:not-installed');

    expect(restricted).toHaveLength(1);
    expect(restricted[0]?.message).toContain('must not import Nest, TypeORM, pg, NATS, Redis, BullMQ');
  });

  it('importing another workspace library from libs/agent-loop is a lint error', () => {
    expect(boundaryErrors('loop:workspace-lib').map((e) => e.message)).toEqual([
      'A project tagged with "scope:agent-loop" can only depend on libs tagged with "scope:agent-loop"',
    ]);
  });

  it('relative imports inside libs/agent-loop are fine', () => {
    expect(boundaryErrors('loop:relative')).toEqual([]);
    expect(restrictedImports('loop:relative')).toEqual([]);
  });
});

describe('apps', () => {
  it.each(ALLOWED_IN_APPS)('an app may import %s', (pkg) => {
    expect(boundaryErrors(`app:${pkg}`)).toEqual([]);
    expect(restrictedImports(`app:${pkg}`)).toEqual([]);
  });

  it('an app may import a library, agent-loop included', () => {
    expect(boundaryErrors('app:agent-loop')).toEqual([]);
  });

  it('an app importing another app is a lint error', () => {
    const errors = boundaryErrors('app:other-app');

    expect(errors).toHaveLength(1);
    expect(errors[0]?.message).toMatch(/"type:app" can only depend on libs tagged with "type:lib"/);
  });
});

describe('libs/testing is for tests only', () => {
  it('production code importing @skald/testing is a lint error', () => {
    const restricted = restrictedImports('testing:from-src');

    expect(restricted).toHaveLength(1);
    expect(restricted[0]?.message).toContain('may only be imported from tests');
  });

  it('a spec next to the code may import @skald/testing', () => {
    expect(restrictedImports('testing:from-spec')).toEqual([]);
    expect(boundaryErrors('testing:from-spec')).toEqual([]);
  });
});
