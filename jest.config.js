// One Jest configuration, three projects:
//   unit         *.spec.ts next to the code: no I/O, milliseconds each. test/setup/unit-guard.ts fails a spec
//                that starts a process, opens a connection, or changes a file outside os.tmpdir() or in the checkout.
//   integration  *.integration-spec.ts: real Postgres / Redis / NATS on loopback, and every test that needs a
//                process (a kustomize render, an ESLint run, dash and bash), the network or real files.
//   e2e          test/e2e/**: the five apps as separate processes + llm-sim, public API only; and
//                *.serial-spec.ts next to the code: integration tests whose bounds are wall-clock times
//                (another user's call answered within N ms during an attack), run in the serial phase
//                so that the parallel unit and integration workers do not eat their budget.
const transform = {
  '^.+\\.ts$': [
    '@swc/jest',
    {
      jsc: {
        parser: { syntax: 'typescript', decorators: true },
        transform: { legacyDecorator: true, decoratorMetadata: true },
        target: 'es2022',
      },
      module: { type: 'commonjs' },
    },
  ],
};
// jose, openid-client (and its oauth4webapi) and @seriousme/openapi-schema-validator ship ES modules only; Jest's CommonJS runtime gets them compiled
// (tests that boot the gateway in-process; the OpenAPI document's validation).
const esmOnly = ['jose', 'openid-client', 'oauth4webapi', '@seriousme/openapi-schema-validator'];
for (const pkg of esmOnly)
  transform[`/node_modules/${pkg}/.+\\.js$`] = [
    '@swc/jest',
    { jsc: { target: 'es2022' }, module: { type: 'commonjs' } },
  ];
const transformIgnorePatterns = [`/node_modules/(?!(${esmOnly.join('|')})/)`];
const moduleNameMapper = {
  '^@skald/agent-loop/testing$': '<rootDir>/libs/agent-loop/src/testing/index.ts',
  '^@skald/testing/unit$': '<rootDir>/libs/testing/src/unit/new-test-service.ts',
  '^@skald/testing/attack-suite$': '<rootDir>/libs/testing/src/attack-suite-report.ts',
  // every other subpath a library's package.json exports is its src/<name>.ts (`@skald/service-kit/telemetry`,
  // `@skald/messaging/bus-errors`, …): narrow entries that spare a spec the index's Nest, NATS or TypeORM
  '^@skald/([a-z-]+)/([a-z-]+)$': '<rootDir>/libs/$1/src/$2.ts',
  '^@skald/([a-z-]+)$': '<rootDir>/libs/$1/src/index.ts',
};
// Each test file runs its modules anew; test/setup/code-cache-runtime.js keeps V8's code cache of each compiled module
// for the worker's next files (the unit project's CPU time: 57 s → 47 s on 46 of its files).
const runtime = '<rootDir>/test/setup/code-cache-runtime.js';
const base = {
  rootDir: __dirname,
  transform,
  transformIgnorePatterns,
  moduleNameMapper,
  runtime,
  testEnvironment: 'node',
};
// Coverage is measured for the loop library: at least 90 % of its lines, no exclusions.
const collectCoverageFrom = ['<rootDir>/libs/agent-loop/src/**/*.ts', '!<rootDir>/libs/agent-loop/src/**/*.spec.ts'];

module.exports = {
  collectCoverageFrom,
  coverageReporters: ['text', 'text-summary'],
  coverageThreshold: { './libs/agent-loop/src/': { lines: 90 } },
  projects: [
    {
      ...base,
      displayName: 'unit',
      collectCoverageFrom,
      setupFilesAfterEnv: ['<rootDir>/test/setup/unit-guard.ts'],
      testMatch: [
        '<rootDir>/{apps,libs}/*/src/**/*.spec.ts',
        '<rootDir>/test/{lint,compose,unit,k8s,docs}/**/*.spec.ts',
      ],
    },
    {
      ...base,
      displayName: 'integration',
      testMatch: [
        '<rootDir>/{apps,libs}/*/src/**/*.integration-spec.ts',
        '<rootDir>/test/{lint,compose,k8s,docs}/**/*.integration-spec.ts',
        '<rootDir>/test/integration/**/*.spec.ts',
      ],
      globalSetup: '<rootDir>/test/setup/global-setup.js',
      globalTeardown: '<rootDir>/test/setup/global-teardown.js',
    },
    {
      ...base,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.e2e-spec.ts', '<rootDir>/{apps,libs}/*/src/**/*.serial-spec.ts'],
      globalSetup: '<rootDir>/test/setup/global-setup.js',
      globalTeardown: '<rootDir>/test/setup/global-teardown.js',
    },
  ],
};
