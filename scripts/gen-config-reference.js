#!/usr/bin/env node
// The configuration reference of docs/operations.md, generated from the apps' zod config schemas.
//
//   npm run build && node scripts/gen-config-reference.js          # rewrite the section in docs/operations.md
//   node scripts/gen-config-reference.js --check                   # exit 1 when the section is out of date
//
// Names, defaults and allowed values come from the schemas the apps validate their environment with
// (apps/<app>/dist/config.js, libs/service-kit/dist/config.js); descriptions from the schema field's `.describe()`,
// else the doc comment above the field in the schema's source, else DESCRIPTIONS below. A variable with none of
// them stops the generator, so a new variable cannot land undocumented (test/docs/operations.integration-spec.ts runs this).
'use strict';

const { readFileSync } = require('node:fs');
const { join } = require('node:path');
const { formatWithPrettier, replaceSection: replaceDocSection } = require('./lib-doc-section');
const { writeOrCheck } = require('./lib-generated');

const ROOT = join(__dirname, '..');
const OPERATIONS_MD = join(ROOT, 'docs', 'operations.md');
const BEGIN = '<!-- BEGIN GENERATED: config reference (scripts/gen-config-reference.js) -->';
const END = '<!-- END GENERATED: config reference -->';

/** The apps, their schema's export name and the source files whose doc comments describe it. */
const APPS = [
  { name: 'gateway', schema: 'GatewayConfigSchema' },
  { name: 'session-worker', schema: 'WorkerConfigSchema' },
  { name: 'approval-service', schema: 'ApprovalConfigSchema' },
  { name: 'tool-runner', schema: 'ToolRunnerConfigSchema' },
  { name: 'scheduler', schema: 'SchedulerConfigSchema' },
];
const BASE_SOURCE = 'libs/service-kit/src/config.ts';
const appSource = (/** @type {string} */ app) => `apps/${app}/src/config.ts`;

/**
 * A zod (v4) schema as far as this reader looks into it: `_zod.def` is zod's own description of a schema.
 * @typedef {{ description?: string, _zod: { def: ZodDef } }} ZodField
 * @typedef {{ type: string, in?: ZodField, innerType?: ZodField, defaultValue?: unknown, entries?: Record<string, ZodField> }} ZodDef
 */
/** @typedef {{ name: string, default: string, description: string }} OutsideVariable */

/**
 * Descriptions of the fields that have no doc comment in their schema.
 * @type {Record<string, string>}
 */
const DESCRIPTIONS = {
  NODE_ENV:
    '`production` in deployments and under `npm start`, `development` under `npm run dev`. In production a published NATS message is checked against its schema by its receivers only, not also by its sender.',
  LOG_LEVEL: 'pino log level of the JSON logs.',
  DATABASE_URL:
    "Postgres connection URL. An app's names its own role (`skald_<app>`, see Database roles); the migration CLI's (`node libs/persistence/dist/cli.js up`, then `roles`) names the admin. The database is created by the migration when missing.",
  DATABASE_POOL_SIZE:
    'Postgres connections per process. Keep (replicas of every app) × this below Postgres `max_connections`.',
  NATS_URL: 'NATS server(s), comma-separated. Plain NATS: nothing uses JetStream.',
  NATS_USER:
    "The app's NATS user: its own name (`gateway`, `session-worker`, …), whose subjects `k8s/base/infra/nats.conf` grants; its replies arrive on `_INBOX.<user>.`.",
  NATS_PASSWORD: 'NATS password of `NATS_USER` (`NATS_PASSWORD_<APP>` in the Secret).',
  NATS_REQUEST_TIMEOUT_MS: 'How long a NATS request waits for an answer before it fails.',
  REDIS_URL:
    "Redis connection URL with the app's own ACL user (`redis://skald-<app>:password@host:6379`). Redis must run with `maxmemory-policy noeviction`.",
  PORT: 'HTTP port: `/healthz`, `/readyz`, `/metrics` (and the API on the gateway).',
  HOST: 'Address the HTTP server binds; `0.0.0.0` in containers.',
  SKALD_TOKEN_TTL_SECS: 'Lifetime of the session JWTs the gateway issues at login.',
  SKALD_ADMIN_EMAIL:
    'With `SKALD_ADMIN_PASSWORD`: the admin account the gateway creates at start when no user has this e-mail.',
  SKALD_ADMIN_PASSWORD: 'Password of that admin account (at least 8 characters); used only to create it.',
  SKALD_MAX_TOOL_ROUNDS: 'Model rounds one turn may take before it ends `exhausted`.',
  SKALD_MAX_HISTORY_MESSAGES: 'History rows sent to the model when compaction is off (older ones are left out).',
  SKALD_MAX_TOOL_RESULT_CHARS:
    "Previous turns' tool results longer than this are hidden from the model (default: never).",
};

/**
 * Variables the apps read outside their schema, with where they are read.
 * @type {Record<string, OutsideVariable[]>}
 */
const OUTSIDE_SCHEMA = {
  // every app (libs/messaging)
  base: [
    {
      name: 'SKALD_HOP_TRACE',
      default: 'unset',
      description:
        'A file to append hop-trace time marks to (`scripts/bench/echo-trace.js --hops`): each NATS handler, request and write of the process, on the monotonic clock. Unset: off (one constant test per mark). A measurement aid, not for production.',
    },
    // libs/service-kit/src/telemetry.ts (the OpenTelemetry SDK reads the other OTEL_* variables itself)
    {
      name: 'OTEL_EXPORTER_OTLP_TRACES_ENDPOINT',
      default: 'unset',
      description:
        'The full URL traces are sent to (instead of `OTEL_EXPORTER_OTLP_ENDPOINT` + `/v1/traces`); set, traces are on. See *Telemetry*.',
    },
    {
      name: 'OTEL_TRACES_EXPORTER',
      default: '`otlp`',
      description: '`none` turns traces off whatever the endpoint; another exporter (`console`) turns them on.',
    },
    { name: 'OTEL_SDK_DISABLED', default: 'unset', description: '`true`: traces off whatever the endpoint.' },
    {
      name: 'OTEL_SERVICE_NAME',
      default: 'the app’s name',
      description: 'The `service.name` of the app’s spans; set it per app only (all five would share it).',
    },
    {
      name: 'OTEL_METRICS_EXPORTER',
      default: 'unset',
      description: 'Unset: the SDK exports no metrics (Prometheus reads `/metrics`); set, as the SDK documents.',
    },
    {
      name: 'OTEL_LOGS_EXPORTER',
      default: 'unset',
      description: 'Unset: the SDK exports no logs (they are stdout’s JSON lines); set, as the SDK documents.',
    },
    {
      name: 'OTEL_SEMCONV_STABILITY_OPT_IN',
      default: 'unset',
      description:
        '`http` or `http/dup`: HTTP spans follow the stable conventions (`url.path`, …) or both; the query string is left out either way.',
    },
  ],
  gateway: [
    {
      name: 'SKALD_WEB_DIST',
      default: 'the `@skald/web` workspace’s `dist`',
      description: 'Directory of the built web client served at `/`.',
    },
  ],
  'session-worker': [
    {
      name: 'SKALD_LLM_CLIENTS',
      default: 'unset',
      description:
        '**Secret** when it holds keys. JSON array of named OpenAI-compatible clients (strength, scope, priority, prices; keys best given by `apiKeyEnv`, the name of another variable). When set it is the whole LLM configuration (docs/llm.md). Read by libs/llm.',
    },
    {
      name: 'OPENAI_BASE_URL',
      default: '`https://api.openai.com/v1` when a key or model is set',
      description: 'Endpoint of the single client `default`, used when `SKALD_LLM_CLIENTS` is unset. Read by libs/llm.',
    },
    {
      name: 'OPENAI_API_KEY',
      default: 'unset',
      description: '**Secret.** API key of the client `default`. Read by libs/llm.',
    },
    {
      name: 'SKALD_LLM_MODEL',
      default: 'unset',
      description:
        'Model of the client `default`; required with `OPENAI_BASE_URL` / `OPENAI_API_KEY`. With no LLM variable at all the worker has no client. Read by libs/llm.',
    },
  ],
  // `node libs/persistence/dist/cli.js backup` / `restore` (libs/persistence/src/backup)
  backup: [
    {
      name: 'SKALD_BACKUP_PASSPHRASE',
      default: 'required',
      description:
        '**Secret.** Seals the secrets in a backup archive (at least 16 characters; scrypt, AES-256-GCM); restore needs the same one. Keep it apart from the archives.',
    },
    {
      name: 'SKALD_BACKUP_PASSPHRASE_FILE',
      default: 'unset',
      description:
        'A file holding the passphrase instead (its trailing newline dropped); wins over `SKALD_BACKUP_PASSPHRASE`.',
    },
    {
      name: 'SKALD_PG_BIN',
      default: 'the `PATH`',
      description:
        "Directory of the `pg_dump` and `pg_restore` to run; they must be of the server's major version or newer.",
    },
  ],
};

const SECRET_NAME = /(PASSWORD|SECRET|_KEY$|_TOKEN$)/;
/** Names that look like a secret's and are not: a switch. */
const NOT_SECRET = new Set(['SKALD_PASSWORD_LOGIN']);

/**
 * Whether a setting is a secret, as the reference marks it: a secret's name (PASSWORD, SECRET, …_KEY, …_TOKEN) that
 * is no switch, or a doc comment that says `**Secret**`.
 * @param {string} name
 * @param {string | undefined} text
 */
function isSecretSetting(name, text) {
  return (SECRET_NAME.test(name) && !NOT_SECRET.has(name)) || /^\*\*Secret/.test(text ?? '');
}

/**
 * The secret settings of each app's config schema (`schemas` as `loadBuiltSchemas` gives them), by the same rule as
 * the reference: what deployments must take from a Secret, never from a ConfigMap or a default.
 * @param {{ apps: Record<string, { shape: Record<string, ZodField> }> }} schemas
 * @returns {Record<string, string[]>}
 */
function secretSettings(schemas) {
  /** @type {Record<string, string[]>} */
  const out = {};
  for (const app of APPS) {
    const docs = docCommentsOf(appSource(app.name));
    out[app.name] = Object.entries(schemas.apps[app.name]?.shape ?? {})
      .filter(([name, field]) => isSecretSetting(name, field.description ?? docs[name]))
      .map(([name]) => name);
  }
  return out;
}

// -------------------------------------------------------------------------------------------------------------
// Doc comments from the schema sources.

/**
 * `{ NAME: 'doc comment text' }` for every UPPER_CASE property with a /** *\/ comment in the file.
 * @param {string} file
 */
function docCommentsOf(file) {
  const ts = require('typescript');
  const text = readFileSync(join(ROOT, file), 'utf8');
  const source = ts.createSourceFile(file, text, ts.ScriptTarget.ES2022, true);
  /** @type {Record<string, string>} */
  const docs = {};
  const visit = (/** @type {ts.Node} */ node) => {
    if (ts.isPropertyAssignment(node) && ts.isIdentifier(node.name) && /^[A-Z][A-Z0-9_]*$/.test(node.name.text)) {
      const comments = ts
        .getJSDocCommentsAndTags(node)
        .map((d) => ts.getTextOfJSDocComment(d.comment) ?? '')
        .filter((c) => c.trim() !== '');
      if (comments.length > 0) docs[node.name.text] = comments.join(' ').replace(/\s+/g, ' ').trim();
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return docs;
}

// -------------------------------------------------------------------------------------------------------------
// Reading a zod (v4) field.

/**
 * `{ default?, required, values? }` of one field: unwraps pipes (transforms), defaults and optionals.
 * @param {ZodField} field
 */
function describeField(field) {
  /** @type {{ required: boolean, hasDefault: boolean, default: unknown, values: unknown[] | undefined, type: string | undefined }} */
  const out = { required: true, hasDefault: false, default: undefined, values: undefined, type: undefined };
  /** @type {ZodField | undefined} */
  let node = field;
  for (let depth = 0; node && depth < 20; depth++) {
    /** @type {ZodDef} */
    const def = node._zod.def;
    if (def.type === 'pipe') node = def.in;
    else if (def.type === 'default' || def.type === 'prefault') {
      out.hasDefault = true;
      out.required = false;
      out.default = def.defaultValue;
      node = def.innerType;
    } else if (def.type === 'optional' || def.type === 'nullable') {
      out.required = false;
      node = def.innerType;
    } else {
      out.type = def.type;
      if (def.type === 'enum') out.values = Object.values(def.entries ?? {});
      break;
    }
  }
  return out;
}

/**
 * @param {ReturnType<typeof describeField>} info
 */
function formatDefault(info) {
  if (info.required) return '**required**';
  if (!info.hasDefault) return 'unset';
  let value = info.default;
  if (typeof value === 'string') {
    if (value === '') return 'empty';
    // A default computed from the working directory (SKALD_WORKSPACES) is shown relative to it.
    const cwd = process.cwd();
    if (value === cwd || value.startsWith(`${cwd}/`)) value = `<working directory>${value.slice(cwd.length)}`;
    return `\`${String(value)}\``;
  }
  return `\`${JSON.stringify(value)}\``;
}

/**
 * @param {string} text
 */
function cell(text) {
  return String(text).replace(/\|/g, '\\|').replace(/\n/g, ' ');
}

// -------------------------------------------------------------------------------------------------------------
// Rendering.

/**
 * The markdown between the markers.
 * @param {{ base: { shape: Record<string, ZodField> }, apps: Record<string, { shape: Record<string, ZodField> }> }} schemas
 */
function renderReference(schemas) {
  const baseDocs = docCommentsOf(BASE_SOURCE);
  /** @type {string[]} */
  const missing = [];
  const describe = (
    /** @type {string} */ name,
    /** @type {ZodField} */ field,
    /** @type {Record<string, string>} */ docs,
    /** @type {string} */ where,
  ) => {
    const fromSchema = field.description;
    const text = fromSchema ?? docs[name] ?? baseDocs[name] ?? DESCRIPTIONS[name];
    if (!text) {
      missing.push(`${name} (${where})`);
      return '';
    }
    const info = describeField(field);
    const values = info.values ? ` One of ${info.values.map((v) => `\`${String(v)}\``).join(', ')}.` : '';
    const secret = isSecretSetting(name, undefined) && !/^\*\*Secret/.test(text) ? '**Secret.** ' : '';
    return `${secret}${text}${values}`;
  };
  const row = (/** @type {string} */ name, /** @type {string} */ def, /** @type {string} */ description) =>
    `| \`${name}\` | ${cell(def)} | ${cell(description)} |`;
  const header = ['| Variable | Default | Description |', '| --- | --- | --- |'];

  const lines = [
    BEGIN,
    '<!-- Do not edit by hand: `npm run build && node scripts/gen-config-reference.js`. -->',
    '',
    '### Every app',
    '',
    'Read by all five apps (libs/service-kit `BaseConfigSchema`).',
    '',
    ...header,
  ];
  const baseShape = schemas.base.shape;
  for (const [name, field] of Object.entries(baseShape)) {
    lines.push(row(name, formatDefault(describeField(field)), describe(name, field, baseDocs, BASE_SOURCE)));
  }
  for (const extra of OUTSIDE_SCHEMA.base) lines.push(row(extra.name, extra.default, extra.description));

  for (const app of APPS) {
    const schema = schemas.apps[app.name];
    if (!schema) throw new Error(`no config schema for ${app.name}`);
    const docs = docCommentsOf(appSource(app.name));
    lines.push('', `### ${app.name}`, '', `\`${appSource(app.name)}\` (\`${app.schema}\`).`, '', ...header);
    for (const [name, field] of Object.entries(schema.shape)) {
      const inBase = Object.prototype.hasOwnProperty.call(baseShape, name);
      if (inBase && formatDefault(describeField(field)) === formatDefault(describeField(baseShape[name]))) continue;
      lines.push(row(name, formatDefault(describeField(field)), describe(name, field, docs, appSource(app.name))));
    }
    for (const extra of OUTSIDE_SCHEMA[app.name] ?? []) lines.push(row(extra.name, extra.default, extra.description));
  }
  lines.push(
    '',
    '### backup and restore',
    '',
    '`node libs/persistence/dist/cli.js backup` / `restore` (see Backup and restore). They also read `DATABASE_URL` ' +
      "(the admin's), `SKALD_WORKSPACES`, and `SKALD_SECRETS_KEY` and `SKALD_JWT_SECRET` (backup).",
    '',
    ...header,
  );
  for (const extra of OUTSIDE_SCHEMA.backup) lines.push(row(extra.name, extra.default, extra.description));
  lines.push(END);

  if (missing.length > 0) {
    throw new Error(
      `undocumented configuration: ${missing.join(', ')}. Add a /** doc comment */ above the field in its schema ` +
        '(or .describe()), then run `node scripts/gen-config-reference.js`.',
    );
  }
  return lines.join('\n');
}

/** The schemas of the built apps (`npm run build` first). */
function loadBuiltSchemas() {
  const load = (/** @type {string} */ path, /** @type {string} */ exportName) => {
    let mod;
    try {
      mod = require(join(ROOT, path));
    } catch (e) {
      throw new Error(`cannot load ${path} (${e.message}): run \`npx tsc -b tsconfig.build.json\` first`);
    }
    if (!mod[exportName]) throw new Error(`${path} exports no ${exportName}`);
    return mod[exportName];
  };
  /** @type {Record<string, { shape: Record<string, ZodField> }>} */
  const apps = {};
  for (const app of APPS) apps[app.name] = load(`apps/${app.name}/dist/config.js`, app.schema);
  return { base: load('libs/service-kit/dist/config.js', 'BaseConfigSchema'), apps };
}

/**
 * `markdown` with the generated section replaced by `section`.
 * @param {string} markdown
 * @param {string} section
 */
function replaceSection(markdown, section) {
  return replaceDocSection(markdown, BEGIN, END, section);
}

/**
 * docs/operations.md as it should be: `markdown` with a fresh section, formatted by Prettier like the repo's files.
 * @param {string} markdown
 * @param {string} section
 */
function expectedDocument(markdown, section) {
  return formatWithPrettier(replaceSection(markdown, section), OPERATIONS_MD);
}

function main() {
  const section = renderReference(loadBuiltSchemas());
  const markdown = readFileSync(OPERATIONS_MD, 'utf8');
  writeOrCheck(OPERATIONS_MD, expectedDocument(markdown, section), 'node scripts/gen-config-reference.js');
}

module.exports = {
  OPERATIONS_MD,
  OUTSIDE_SCHEMA,
  renderReference,
  loadBuiltSchemas,
  expectedDocument,
  secretSettings,
};

if (require.main === module) {
  try {
    main();
  } catch (e) {
    console.error(e.message);
    process.exit(1);
  }
}
