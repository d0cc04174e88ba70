// ESLint 9 flat config for the whole monorepo.
//
// - typescript-eslint with type information (projectService: each file is checked with the nearest
//   tsconfig that includes it; specs and test/ fall back to the root tsconfig.json).
// - @nx/enforce-module-boundaries: apps never import apps, libs never import apps, agent-loop imports
//   nothing but itself and none of the infrastructure SDKs, libs/testing only from tests.
// - eslint-config-prettier last, so formatting is Prettier's job alone.
import js from '@eslint/js';
import nx from '@nx/eslint-plugin';
import prettier from 'eslint-config-prettier';
import tseslint from 'typescript-eslint';

const tsconfigRootDir = import.meta.dirname;

/** Packages the loop library must never see: it talks to the world only through its ports. */
const AGENT_LOOP_BANNED = ['@nestjs/*', 'typeorm', 'pg', 'nats', '@nats-io/*', 'ioredis', 'bullmq', 'openai', 'zod'];
const AGENT_LOOP_BANNED_MESSAGE =
  'libs/agent-loop knows nothing of Skald services: it must not import Nest, TypeORM, pg, NATS, Redis, BullMQ, ' +
  'the OpenAI SDK or zod. Add a port (store, gate, tool set, LLM client, event sink, clock) and implement it in the app.';

/** Node's globals, for JavaScript that no tsconfig covers. */
const NODE_GLOBALS = Object.fromEntries(
  [
    'process',
    'console',
    'Buffer',
    'URL',
    'require',
    'module',
    '__dirname',
    '__filename',
    'setTimeout',
    'clearTimeout',
  ].map((name) => [name, 'readonly']),
);

const TEST_FILES = [
  '**/*.spec.{ts,tsx}',
  '**/*.integration-spec.ts',
  '**/*.serial-spec.ts',
  '**/*.e2e-spec.ts',
  'test/**/*.ts',
];

export default tseslint.config(
  {
    ignores: [
      '**/node_modules/**',
      '**/dist/**',
      '**/coverage/**',
      '**/.nx/**',
      '**/test-results/**',
      '**/.skald/**',
      '**/*.d.ts',
      // type-checked by test/integration/openapi-client.spec.ts against types generated from the API document
      'test/fixtures/openapi-client/**',
    ],
  },

  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir },
    },
  },

  // JavaScript. scripts/ is CommonJS with checked JSDoc (scripts/tsconfig.json, scripts/bench/tsconfig.json): the
  // typed rules apply, and `tsc` reports an undefined name. Elsewhere (config files, Jest's global setup, test
  // fixtures) no tsconfig covers it: no type information, Node's globals.
  { files: ['**/*.{js,cjs}'], languageOptions: { sourceType: 'commonjs' } },
  { files: ['**/*.{js,cjs}'], rules: { '@typescript-eslint/no-require-imports': 'off' } },
  { files: ['scripts/**/*.{js,cjs,mjs}'], rules: { 'no-undef': 'off' } },
  { files: ['**/*.{js,cjs,mjs}'], ignores: ['scripts/**'], ...tseslint.configs.disableTypeChecked },
  { files: ['**/*.{js,cjs,mjs}'], ignores: ['scripts/**'], languageOptions: { globals: NODE_GLOBALS } },

  {
    files: ['**/*.{ts,tsx}', 'scripts/**/*.{js,cjs,mjs}'],
    plugins: { '@nx': nx },
    rules: {
      // Type-aware rules STYLE.md makes errors.
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      // A `default:` does not excuse a missing union member: every switch over a union ends exhaustively.
      '@typescript-eslint/switch-exhaustiveness-check': ['error', { considerDefaultExhaustiveForUnions: false }],
      '@typescript-eslint/await-thenable': 'error',
      // `let h!: T` read by a closure before its single assignment cannot be a const.
      'prefer-const': ['error', { ignoreReadBeforeAssign: true }],
      '@typescript-eslint/return-await': ['error', 'in-try-catch'],
      '@typescript-eslint/no-unused-vars': [
        'error',
        { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrorsIgnorePattern: '^_' },
      ],
      // Untrusted JSON, SDK results and database rows are parsed with zod or typed helpers, never used as `any`.
      '@typescript-eslint/no-unsafe-assignment': 'error',
      '@typescript-eslint/no-unsafe-member-access': 'error',
      '@typescript-eslint/no-unsafe-call': 'error',
      '@typescript-eslint/no-unsafe-return': 'error',
      '@typescript-eslint/no-unsafe-argument': 'error',

      '@nx/enforce-module-boundaries': [
        'error',
        {
          enforceBuildableLibDependency: false,
          allowCircularSelfDependency: false,
          checkDynamicDependenciesExceptions: [],
          banTransitiveDependencies: false,
          depConstraints: [
            // An app is a deployable: it may use libraries, never another app.
            { sourceTag: 'type:app', onlyDependOnLibsWithTags: ['type:lib'] },
            // A library never reaches up into an app.
            { sourceTag: 'type:lib', onlyDependOnLibsWithTags: ['type:lib'] },
            // The loop is pure: no other workspace project and none of the infrastructure SDKs.
            {
              sourceTag: 'scope:agent-loop',
              onlyDependOnLibsWithTags: ['scope:agent-loop'],
              bannedExternalImports: AGENT_LOOP_BANNED,
            },
          ],
        },
      ],
    },
  },

  // Belt and braces for agent-loop: a clear message even for a banned package that is not installed
  // (enforce-module-boundaries only knows packages present in the project graph).
  {
    files: ['libs/agent-loop/**/*.ts'],
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: AGENT_LOOP_BANNED.flatMap((p) => (p.endsWith('/*') ? [p] : [p, `${p}/*`])),
              message: AGENT_LOOP_BANNED_MESSAGE,
            },
          ],
        },
      ],
    },
  },

  // libs/testing (llm-sim, stack launcher, WS client) may be used by anything, but only from tests.
  {
    files: ['apps/**/*.{ts,tsx}', 'libs/**/*.ts'],
    ignores: [...TEST_FILES, 'libs/testing/**', '**/testing-fixtures/**'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['@skald/testing', '@skald/testing/*'],
              message: '@skald/testing (llm-sim, stack launcher, WS test client) may only be imported from tests.',
            },
          ],
        },
      ],
    },
  },

  // The web bundle and the client SDK take no zod: from the contracts they import types, and values only from
  // their zod-free entries (`@skald/contracts/server-frame`, `/route-table`, `/push-message`, `/notify-kinds`, which the bundler and the web
  // tsconfig map to its source).
  {
    files: ['apps/web/**/*.ts', 'apps/web/**/*.tsx', 'libs/client/**/*.ts'],
    ignores: TEST_FILES,
    rules: {
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: '@skald/contracts',
              allowTypeImports: true,
              message:
                'the web bundle takes no zod: import types here, values from @skald/contracts/server-frame, /route-table, /push-message or /notify-kinds.',
            },
            { name: 'zod', message: 'the web bundle takes no zod.' },
          ],
        },
      ],
    },
  },

  // Tests and shipped fakes (`src/testing/`): fakes implement async ports synchronously, so `async` without
  // `await` is the honest shape there.
  {
    files: [...TEST_FILES, '**/src/testing/**/*.ts'],
    rules: { '@typescript-eslint/require-await': 'off' },
  },

  // scripts/: a built module loaded by path (`require(path.join(ROOT, 'libs/…/dist'))`) and a parsed JSON file are
  // `any` to TypeScript, and a JSDoc cast does not reach these rules (ESLint's tree has no node for it); the JSDoc
  // types are checked by tsc. `const { join } = require('node:path')` takes functions, not `this`-bound methods.
  {
    files: ['scripts/**/*.{js,cjs,mjs}'],
    rules: {
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/unbound-method': 'off',
    },
  },
  // The benchmarks not yet clean under strict null checks carry `// @ts-nocheck` (scripts/bench/tsconfig.json).
  {
    files: ['scripts/bench/**/*.js'],
    rules: { '@typescript-eslint/ban-ts-comment': ['error', { 'ts-nocheck': false }] },
  },

  // Tests: `expect(mock.method)` reads a method off a jest mock, which is how jest asserts calls. The no-unsafe-*
  // rules hold here too: rows are typed where they are read (`ds.query<Row[]>`), and asymmetric matchers come
  // typed from `@jest/globals` (@types/jest types them `any`).
  {
    files: TEST_FILES,
    rules: {
      '@typescript-eslint/unbound-method': 'off',
      '@typescript-eslint/no-non-null-assertion': 'off',
    },
  },

  prettier,
);
