// k8s/ is checked here since no cluster runs on CI: every overlay rendered (`kubectl kustomize`, or
// test/k8s/kustomize.ts without kubectl), every object valid against the Kubernetes JSON schema, and carrying what
// operators rely on (probes, resources, non-root pods, autoscaling, disruption budgets, the tool runner's network
// isolation and sandbox needs, a drain shorter than the kill, migrations, each service's own credentials for
// Postgres, NATS and Redis, no secret in the repository).
//
// The schemas are those of the npm package `kubernetes-models` (a devDependency, pinned): `new Deployment(obj)
// .validate()` throws with Ajv's errors. They do not reject unknown fields; the checks below read the fields users
// rely on by name, so a misspelt one fails there.
import { execFileSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { natsServerConfig, REDIS_SERVICES, redisServerUserArgs, redisUser, serviceSecretVar } from '@skald/contracts';
import Ajv from 'ajv';
import { ToolRunnerConfigSchema } from '../../apps/tool-runner/src/config';
import {
  buildKustomization,
  findKubectl,
  k8sDir,
  parseYamlStream,
  render,
  renderWithKubectl,
  repoRoot,
  type K8sObject,
} from './kustomize';
import {
  APP_CONFIG_SCHEMAS,
  APP_NAMES,
  APPS,
  type AppName,
  requiredEnv,
  shellSteps,
  usesRedis,
} from '../support/deployment';
import { instanceOf, serviceRoleName } from '@skald/persistence';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const configReference = require('../../scripts/gen-config-reference.js') as {
  loadBuiltSchemas(): unknown;
  secretSettings(schemas: unknown): Record<string, string[]>;
};
/** Each app's secret settings, read off its config schema as the configuration reference marks them. */
const SECRET_SETTINGS = configReference.secretSettings(configReference.loadBuiltSchemas());

// eslint-disable-next-line @typescript-eslint/no-require-imports
const genSecrets = require('../../scripts/gen-secrets.js') as {
  PROVIDED: string[];
  secretData(env: NodeJS.ProcessEnv): Record<string, string>;
};

/** Env vars each app reads: its config schema, plus what libs/llm reads in the session worker. */
const LLM_ENV = ['OPENAI_BASE_URL', 'OPENAI_API_KEY', 'SKALD_LLM_MODEL', 'SKALD_LLM_CLIENTS'];
const APP_ENV = Object.fromEntries(
  APP_NAMES.map((app) => [
    app,
    new Set([...Object.keys(APP_CONFIG_SCHEMAS[app].shape), ...(app === 'session-worker' ? LLM_ENV : [])]),
  ]),
) as Record<AppName, Set<string>>;
/** Set only to build other variables with $(VAR) (DATABASE_URL, REDIS_URL). */
const HELPER_ENV = new Set(['SKALD_DB_PASSWORD', 'REDIS_PASSWORD']);

type Json = Record<string, unknown>;
interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: {
    secretKeyRef?: { name: string; key: string; optional?: boolean };
    configMapKeyRef?: { name: string; key: string };
    fieldRef?: { fieldPath: string };
  };
}
interface Probe {
  httpGet?: { path: string; port: number | string };
}
interface Container {
  name: string;
  image: string;
  command?: string[];
  args?: string[];
  ports?: { name?: string; containerPort: number }[];
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: {
    runAsNonRoot?: boolean;
    runAsUser?: number;
    privileged?: boolean;
    allowPrivilegeEscalation?: boolean;
    readOnlyRootFilesystem?: boolean;
    capabilities?: { add?: string[]; drop?: string[] };
    procMount?: string;
    seccompProfile?: { type: string; localhostProfile?: string };
    appArmorProfile?: { type: string };
  };
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
}
interface PodSpec {
  containers: Container[];
  initContainers?: Container[];
  hostUsers?: boolean;
  hostNetwork?: boolean;
  hostPID?: boolean;
  hostIPC?: boolean;
  terminationGracePeriodSeconds?: number;
  securityContext?: { runAsNonRoot?: boolean; runAsUser?: number; seccompProfile?: { type: string } };
  volumes?: {
    name: string;
    emptyDir?: unknown;
    persistentVolumeClaim?: { claimName: string };
    configMap?: { name: string };
  }[];
}
interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: unknown[];
}
interface NetworkPolicyPeer {
  podSelector?: LabelSelector;
  namespaceSelector?: LabelSelector;
  ipBlock?: { cidr: string };
}

// ---------------------------------------------------------------------------------------------------------------
// Rendering

const kubectl = findKubectl();

// The overlays render from the repository as checked out: no file of the operator's is needed (the Secret is created
// apart, by scripts/gen-secrets.js).
const overlayDir = (overlay: string): string => join(k8sDir, 'overlays', overlay);

const OVERLAYS = ['dev', 'prod'] as const;
type Overlay = (typeof OVERLAYS)[number];
const rendered: Record<Overlay, K8sObject[]> = {
  dev: render(overlayDir('dev'), kubectl),
  prod: render(overlayDir('prod'), kubectl),
};

function find(objects: K8sObject[], kind: string, name: string): K8sObject {
  const o = objects.find((x) => x.kind === kind && x.metadata.name === name);
  if (!o) throw new Error(`no ${kind} ${name} in the rendered overlay`);
  return o;
}
/** The migration Job: one per version, named skald-migrate-<tag of the gateway image>. */
function migrationJob(objects: K8sObject[]): K8sObject {
  const jobs = objects.filter((x) => x.kind === 'Job' && x.metadata.name.startsWith('skald-migrate-'));
  if (jobs.length !== 1) throw new Error(`expected one migration Job, found ${jobs.length}`);
  return jobs[0];
}
function ofKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}
/** The kinds that run pods (a CronJob's pods are those of its Job template). */
const WORKLOADS = ['Deployment', 'StatefulSet', 'Job', 'CronJob'];
function podSpecOf(o: K8sObject): PodSpec {
  if (o.kind === 'CronJob')
    return (o.spec as { jobTemplate: { spec: { template: { spec: PodSpec } } } }).jobTemplate.spec.template.spec;
  return (o.spec as { template: { spec: PodSpec } }).template.spec;
}
function podLabelsOf(o: K8sObject): Record<string, string> {
  return (o.spec as { template: { metadata: { labels: Record<string, string> } } }).template.metadata.labels;
}
function matches(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (!selector) return false;
  if (selector.matchExpressions?.length) throw new Error('matchExpressions are not evaluated by this test');
  return Object.entries(selector.matchLabels ?? {}).every(([k, v]) => labels[k] === v);
}
function appContainer(objects: K8sObject[], app: AppName): Container {
  const c = podSpecOf(find(objects, 'Deployment', app)).containers.find((x) => x.name === app);
  if (!c) throw new Error(`Deployment ${app} has no container named ${app}`);
  return c;
}

/** The value an env var has in the container: its `env` entry, else a ConfigMap of `envFrom`. */
function effectiveEnv(objects: K8sObject[], c: Container, name: string): string | undefined {
  const direct = c.env?.find((e) => e.name === name);
  if (direct) return direct.value;
  for (const from of c.envFrom ?? []) {
    if (!from.configMapRef) continue;
    const data = (find(objects, 'ConfigMap', from.configMapRef.name).data ?? {}) as Record<string, string>;
    if (name in data) return data[name];
  }
  return undefined;
}

/** The Secret key an env var of the container is read from (undefined when it is not a secretKeyRef). */
function secretKeyOf(c: Container | undefined, name: string): { key: string; optional?: boolean } | undefined {
  return c?.env?.find((e) => e.name === name)?.valueFrom?.secretKeyRef;
}

/**
 * An env var's value as the kubelet expands it: `$(VAR)` of a variable defined EARLIER in `env` becomes its value, or
 * `<KEY>` for one read from the Secret's key KEY; any other `$(VAR)` stays as written (and the app would see it so).
 */
function expandedEnv(c: Container, name: string): string | undefined {
  const env = c.env ?? [];
  const at = env.findIndex((e) => e.name === name);
  if (at < 0) return undefined;
  const earlier = new Map<string, string>();
  for (const e of env.slice(0, at)) {
    const key = e.valueFrom?.secretKeyRef?.key;
    if (key !== undefined) earlier.set(e.name, `<${key}>`);
    else if (e.value !== undefined) earlier.set(e.name, e.value);
  }
  return (env[at]?.value ?? '').replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (m, v: string) => earlier.get(v) ?? m);
}

/** The keys listed in k8s/overlays/prod/secrets.env.example (what an operator puts in the Secret). */
const EXAMPLE_SECRET_KEYS = readFileSync(join(k8sDir, 'overlays', 'prod', 'secrets.env.example'), 'utf8')
  .split('\n')
  .flatMap((l) => /^([A-Z][A-Z0-9_]*)=/.exec(l)?.[1] ?? []);

// ---------------------------------------------------------------------------------------------------------------
// Schema validation

interface Model {
  validate(): void;
}
type ModelClass = new (data: unknown) => Model;

/** kubernetes-models has no Prometheus Operator types: the fields the operator requires, as JSON Schema. */
const PROMETHEUS_RULE_SCHEMA = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    metadata: { type: 'object', required: ['name'] },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['groups'],
      properties: {
        groups: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            additionalProperties: false,
            required: ['name', 'rules'],
            properties: {
              name: { type: 'string', minLength: 1 },
              interval: { type: 'string' },
              rules: {
                type: 'array',
                items: {
                  type: 'object',
                  additionalProperties: false,
                  required: ['alert', 'expr'],
                  properties: {
                    alert: { type: 'string', pattern: '^[A-Za-z_][A-Za-z0-9_]*$' },
                    expr: { type: 'string', minLength: 1 },
                    for: { type: 'string', pattern: '^(([0-9]+)(y|w|d|h|m|s|ms))+$' },
                    labels: { type: 'object', additionalProperties: { type: 'string' } },
                    annotations: { type: 'object', additionalProperties: { type: 'string' } },
                  },
                },
              },
            },
          },
        },
      },
    },
  },
};
const validatePrometheusRule = new Ajv({ allErrors: true, strict: false }).compile(PROMETHEUS_RULE_SCHEMA);

/** The ServiceMonitor fields k8s/ uses, as the operator's CRD defines them (others refused, so a typo fails). */
const SERVICE_MONITOR_SCHEMA = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  properties: {
    metadata: { type: 'object', required: ['name'] },
    spec: {
      type: 'object',
      additionalProperties: false,
      required: ['selector', 'endpoints'],
      properties: {
        selector: {
          type: 'object',
          additionalProperties: false,
          properties: { matchLabels: { type: 'object', additionalProperties: { type: 'string' } } },
        },
        endpoints: {
          type: 'array',
          minItems: 1,
          items: {
            type: 'object',
            additionalProperties: false,
            properties: {
              port: { type: 'string', minLength: 1 },
              path: { type: 'string', pattern: '^/' },
              interval: {
                type: 'string',
                pattern: '^(0|(([0-9]+)y)?(([0-9]+)w)?(([0-9]+)d)?(([0-9]+)h)?(([0-9]+)m)?(([0-9]+)s)?(([0-9]+)ms)?)$',
              },
              bearerTokenSecret: {
                type: 'object',
                additionalProperties: false,
                required: ['key'],
                properties: { name: { type: 'string' }, key: { type: 'string' }, optional: { type: 'boolean' } },
              },
            },
          },
        },
      },
    },
  },
};
const validateServiceMonitor = new Ajv({ allErrors: true, strict: false }).compile(SERVICE_MONITOR_SCHEMA);

function modelFor(apiVersion: string, kind: string): ModelClass | undefined {
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const group = require(`kubernetes-models/${apiVersion}`) as Record<string, ModelClass | undefined>;
    return group[kind];
  } catch {
    return undefined;
  }
}

/** The schema errors of an object ([] when valid). */
function schemaErrors(o: K8sObject): string[] {
  if (o.apiVersion === 'monitoring.coreos.com/v1' && o.kind === 'PrometheusRule') {
    return validatePrometheusRule(o)
      ? []
      : (validatePrometheusRule.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
  }
  if (o.apiVersion === 'monitoring.coreos.com/v1' && o.kind === 'ServiceMonitor') {
    return validateServiceMonitor(o)
      ? []
      : (validateServiceMonitor.errors ?? []).map((e) => `${e.instancePath} ${e.message ?? ''}`);
  }
  const Model = modelFor(o.apiVersion, o.kind);
  if (!Model) return [`no schema for ${o.apiVersion} ${o.kind}`];
  try {
    new Model(o).validate();
    return [];
  } catch (e) {
    return [(e as Error).message];
  }
}

// ---------------------------------------------------------------------------------------------------------------

describe.each(OVERLAYS)('k8s/overlays/%s', (overlay) => {
  const objects = rendered[overlay];

  it('renders the five apps, their Services, the migration Job and Postgres, Redis and NATS', () => {
    const ids = objects.map((o) => `${o.kind}/${o.metadata.name}`);

    for (const app of APP_NAMES) {
      expect(ids).toContain(`Deployment/${app}`);
      expect(ids).toContain(`Service/${app}`);
    }
    expect(migrationJob(objects).metadata.name).toMatch(/^skald-migrate-[a-z0-9.]+$/);
    expect(ids).toEqual(expect.arrayContaining(['StatefulSet/postgres', 'StatefulSet/redis', 'StatefulSet/nats']));
    // Everything lands in the overlay's namespace.
    const namespaces = new Set(objects.map((o) => o.metadata.namespace));
    expect([...namespaces]).toEqual([overlay === 'prod' ? 'skald' : 'skald-dev']);
  });

  it('is valid against the Kubernetes JSON schema, object by object', () => {
    const problems = objects.flatMap((o) => schemaErrors(o).map((e) => `${o.kind}/${o.metadata.name}: ${e}`));

    expect(problems).toEqual([]);
  });

  describe.each(APP_NAMES)('%s', (app) => {
    const port = APPS[app];

    it(`is ready on /readyz and alive on /healthz at port ${port}, where the app listens and its Service sends`, () => {
      const c = appContainer(objects, app);
      const portOf = (p: number | string | undefined): number | undefined =>
        typeof p === 'number' ? p : c.ports?.find((x) => x.name === p)?.containerPort;

      expect(c.readinessProbe?.httpGet?.path).toBe('/readyz');
      expect(c.livenessProbe?.httpGet?.path).toBe('/healthz');
      expect(portOf(c.readinessProbe?.httpGet?.port)).toBe(port);
      expect(portOf(c.livenessProbe?.httpGet?.port)).toBe(port);
      expect(Number(effectiveEnv(objects, c, 'PORT'))).toBe(port);
      expect(effectiveEnv(objects, c, 'HOST')).toBe('0.0.0.0');
      const svc = find(objects, 'Service', app).spec as {
        selector: Record<string, string>;
        ports: { port: number; targetPort: number | string }[];
      };
      expect(matches({ matchLabels: svc.selector }, podLabelsOf(find(objects, 'Deployment', app)))).toBe(true);
      expect(svc.ports.map((p) => portOf(p.targetPort))).toEqual([port]);
    });

    it('requests and limits CPU and memory', () => {
      const r = appContainer(objects, app).resources;

      expect(Object.keys(r?.requests ?? {}).sort()).toEqual(['cpu', 'memory']);
      expect(Object.keys(r?.limits ?? {}).sort()).toEqual(['cpu', 'memory']);
    });

    it('runs as a non-root user, unprivileged, with a read-only root filesystem and /tmp on an emptyDir', () => {
      const pod = podSpecOf(find(objects, 'Deployment', app));
      const c = appContainer(objects, app);

      expect(pod.securityContext?.runAsNonRoot).toBe(true);
      expect(pod.securityContext?.runAsUser).toBeGreaterThan(0);
      expect(pod.hostNetwork ?? false).toBe(false);
      expect(pod.hostPID ?? false).toBe(false);
      expect(pod.hostIPC ?? false).toBe(false);
      expect(c.securityContext?.privileged ?? false).toBe(false);
      expect(c.securityContext?.allowPrivilegeEscalation).toBe(false);
      expect(c.securityContext?.capabilities?.add ?? []).toEqual([]);
      expect(c.securityContext?.capabilities?.drop).toEqual(['ALL']);
      expect(c.securityContext?.readOnlyRootFilesystem).toBe(true);
      const tmp = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
      expect(pod.volumes?.find((v) => v.name === tmp?.name)?.emptyDir).toBeDefined();
    });

    it('is given longer to stop than it takes to drain (terminationGracePeriodSeconds > SKALD_SHUTDOWN_GRACE_MS)', () => {
      const pod = podSpecOf(find(objects, 'Deployment', app));
      const drainMs = Number(
        effectiveEnv(objects, appContainer(objects, app), 'SKALD_SHUTDOWN_GRACE_MS') ??
          ToolRunnerConfigSchema.shape.SKALD_SHUTDOWN_GRACE_MS.parse(undefined),
      );

      expect(drainMs).toBeGreaterThan(0);
      expect((pod.terminationGracePeriodSeconds ?? 30) * 1000).toBeGreaterThan(drainMs);
    });

    it('reads every secret setting of its config schema from the Secret, never a value or the ConfigMap', () => {
      const c = appContainer(objects, app);
      const configMaps = (c.envFrom ?? []).flatMap((f) =>
        f.configMapRef ? Object.keys(find(objects, 'ConfigMap', f.configMapRef.name).data ?? {}) : [],
      );
      const schema = APP_CONFIG_SCHEMAS[app].shape as Record<string, { safeParse(v: unknown): { success: boolean } }>;
      expect(SECRET_SETTINGS[app].length).toBeGreaterThan(0);
      for (const name of SECRET_SETTINGS[app]) {
        const ref = secretKeyOf(c, name);
        expect({ name, secretKey: typeof ref?.key }).toEqual({ name, secretKey: 'string' });
        expect(configMaps).not.toContain(name);
        // the Secret holds the key: generated, or provided by the operator (then optional, and optional in the schema)
        expect(EXAMPLE_SECRET_KEYS).toContain(ref!.key);
        if (ref!.optional) {
          expect(genSecrets.PROVIDED).toContain(ref!.key);
          expect(schema[name].safeParse(undefined).success).toBe(true);
        }
      }
    });

    it('sets only environment variables the app reads (a misspelt name would be ignored silently)', () => {
      const c = appContainer(objects, app);
      const names = [
        ...(c.env ?? []).map((e) => e.name),
        ...(c.envFrom ?? []).flatMap((f) =>
          f.configMapRef ? Object.keys((find(objects, 'ConfigMap', f.configMapRef.name).data ?? {}) as Json) : [],
        ),
      ];

      expect(names.filter((n) => !APP_ENV[app].has(n) && !HELPER_ENV.has(n))).toEqual([]);
    });

    it('sets every variable the app cannot start without (a new required setting fails here, not at rollout)', () => {
      const c = appContainer(objects, app);
      const set = new Set([
        ...(c.env ?? []).map((e) => e.name),
        ...(c.envFrom ?? []).flatMap((f) => {
          if (f.configMapRef) return Object.keys(find(objects, 'ConfigMap', f.configMapRef.name).data ?? {});
          // The Secret is made apart (scripts/gen-secrets.js), with every key it generates.
          return f.secretRef ? Object.keys(genSecrets.secretData({})) : [];
        }),
      ]);

      expect(requiredEnv(app).filter((name) => !set.has(name))).toEqual([]);
    });

    it('connects to Postgres and NATS as its own user with its own password from the Secret', () => {
      const c = appContainer(objects, app);

      expect(expandedEnv(c, 'DATABASE_URL')).toBe(
        `postgres://skald_${app.replace(/-/g, '_')}:<${serviceSecretVar('SKALD_DB_PASSWORD', app)}>@postgres:5432/skald`,
      );
      expect(effectiveEnv(objects, c, 'NATS_USER')).toBe(app);
      expect(secretKeyOf(c, 'NATS_PASSWORD')).toMatchObject({ key: serviceSecretVar('NATS_PASSWORD', app) });
      for (const name of ['SKALD_DB_PASSWORD', 'NATS_PASSWORD']) expect(secretKeyOf(c, name)?.optional).toBeFalsy();
    });

    it(
      usesRedis(app)
        ? 'connects to Redis as its own user with its own password from the Secret'
        : 'is given no Redis URL or password (it does not use Redis)',
      () => {
        const c = appContainer(objects, app);

        if (usesRedis(app)) {
          expect(expandedEnv(c, 'REDIS_URL')).toBe(
            `redis://${redisUser(app)}:<${serviceSecretVar('REDIS_PASSWORD', app)}>@redis:6379`,
          );
          expect(secretKeyOf(c, 'REDIS_PASSWORD')?.optional).toBeFalsy();
        } else {
          expect(effectiveEnv(objects, c, 'REDIS_URL')).toBeUndefined();
          expect(effectiveEnv(objects, c, 'REDIS_PASSWORD')).toBeUndefined();
        }
      },
    );

    it("reads no other service's password and not the owners' (POSTGRES_PASSWORD, REDIS_PASSWORD)", () => {
      const keys = (appContainer(objects, app).env ?? []).flatMap((e) =>
        e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.key] : [],
      );
      const perService = keys.filter((k) => /^(SKALD_DB_PASSWORD|NATS_PASSWORD|REDIS_PASSWORD)_/.test(k));
      const own = ['SKALD_DB_PASSWORD', 'NATS_PASSWORD', ...(usesRedis(app) ? ['REDIS_PASSWORD'] : [])].map((p) =>
        serviceSecretVar(p, app),
      );

      expect(perService.sort()).toEqual(own.sort());
      expect(keys).not.toContain('POSTGRES_PASSWORD');
      expect(keys).not.toContain('REDIS_PASSWORD');
    });

    it('has a PodDisruptionBudget that selects its pods', () => {
      const labels = podLabelsOf(find(objects, 'Deployment', app));
      const pdbs = ofKind(objects, 'PodDisruptionBudget').filter((p) =>
        matches((p.spec as { selector: LabelSelector }).selector, labels),
      );

      expect(pdbs).toHaveLength(1);
      const spec = pdbs[0]?.spec as { maxUnavailable?: number; minAvailable?: number };
      // maxUnavailable keeps node drains possible with one replica; minAvailable: N would block them.
      expect(spec.maxUnavailable).toBe(1);
    });
  });

  it('gives every container of every workload CPU and memory requests and limits', () => {
    const missing: string[] = [];
    for (const o of objects.filter((x) => WORKLOADS.includes(x.kind))) {
      for (const c of [...podSpecOf(o).containers, ...(podSpecOf(o).initContainers ?? [])]) {
        for (const k of ['requests', 'limits'] as const)
          for (const r of ['cpu', 'memory'])
            if (!c.resources?.[k]?.[r]) missing.push(`${o.kind}/${o.metadata.name} ${c.name} ${k}.${r}`);
      }
    }

    expect(missing).toEqual([]);
  });

  it('runs no pod as root', () => {
    const rootPods = objects
      .filter((x) => WORKLOADS.includes(x.kind))
      .filter((o) => {
        const pod = podSpecOf(o);
        return pod.securityContext?.runAsNonRoot !== true || !pod.securityContext.runAsUser;
      })
      .map((o) => `${o.kind}/${o.metadata.name}`);

    expect(rootPods).toEqual([]);
  });

  it('autoscales exactly the gateway and the session worker, targeting their Deployments', () => {
    const hpas = ofKind(objects, 'HorizontalPodAutoscaler');
    const targets = hpas.map((h) => {
      const spec = h.spec as {
        scaleTargetRef: { apiVersion: string; kind: string; name: string };
        minReplicas: number;
        maxReplicas: number;
      };
      expect(spec.minReplicas).toBeGreaterThanOrEqual(1);
      expect(spec.maxReplicas).toBeGreaterThanOrEqual(spec.minReplicas);
      expect(spec.scaleTargetRef.apiVersion).toBe('apps/v1');
      return `${spec.scaleTargetRef.kind}/${spec.scaleTargetRef.name}`;
    });

    expect(targets.sort()).toEqual(['Deployment/gateway', 'Deployment/session-worker']);
    for (const t of targets) {
      const deployment = find(objects, 'Deployment', t.split('/')[1] ?? '');
      // A replica count in the Deployment would undo the autoscaler's on every `kubectl apply`.
      expect((deployment.spec as { replicas?: number }).replicas).toBeUndefined();
    }
  });

  describe('the tool runner', () => {
    const runner = (): K8sObject => find(objects, 'Deployment', 'tool-runner');
    const policiesFor = (labels: Record<string, string>, type: 'Ingress' | 'Egress'): Json[] =>
      ofKind(objects, 'NetworkPolicy')
        .map((p) => p.spec as Json & { podSelector: LabelSelector; policyTypes?: string[] })
        .filter((s) => matches(s.podSelector, labels) && (s.policyTypes ?? ['Ingress']).includes(type));

    it('accepts connections only from session-worker pods', () => {
      const runnerLabels = podLabelsOf(runner());
      const workerLabels = podLabelsOf(find(objects, 'Deployment', 'session-worker'));
      const policies = policiesFor(runnerLabels, 'Ingress');

      expect(policies.length).toBeGreaterThan(0);
      const peers = policies.flatMap((p) =>
        ((p.ingress as { from?: NetworkPolicyPeer[] }[] | undefined) ?? []).flatMap((r) => r.from ?? [{}]),
      );
      expect(peers.length).toBeGreaterThan(0);
      for (const peer of peers) {
        // A peer with no podSelector, a namespaceSelector or an ipBlock would admit more than the worker.
        expect(peer.namespaceSelector).toBeUndefined();
        expect(peer.ipBlock).toBeUndefined();
        expect(matches(peer.podSelector, workerLabels)).toBe(true);
      }
      // The peers select the worker only: no other app's pods match them.
      for (const app of APP_NAMES.filter((a) => a !== 'session-worker')) {
        const labels = podLabelsOf(find(objects, 'Deployment', app));
        expect(peers.some((peer) => matches(peer.podSelector, labels))).toBe(false);
      }
    });

    it('reaches only Postgres, NATS and DNS', () => {
      const policies = policiesFor(podLabelsOf(runner()), 'Egress');
      const postgres = podLabelsOf(find(objects, 'StatefulSet', 'postgres'));
      const nats = podLabelsOf(find(objects, 'StatefulSet', 'nats'));

      expect(policies.length).toBeGreaterThan(0);
      const rules = policies.flatMap(
        (p) => (p.egress as { to?: NetworkPolicyPeer[]; ports?: { port: number; protocol?: string }[] }[]) ?? [],
      );
      const reached = rules.map((r) => {
        expect(r.to?.length).toBeGreaterThan(0);
        expect(r.ports?.length).toBeGreaterThan(0);
        const ports = (r.ports ?? []).map((p) => `${p.protocol ?? 'TCP'}/${p.port}`).sort();
        for (const peer of r.to ?? []) expect(peer.ipBlock).toBeUndefined();
        if (ports.join() === 'TCP/53,UDP/53') return 'dns';
        const peer = r.to?.[0];
        if (r.to?.length === 1 && !peer?.namespaceSelector && matches(peer?.podSelector, postgres)) {
          expect(ports).toEqual(['TCP/5432']);
          return 'postgres';
        }
        if (r.to?.length === 1 && !peer?.namespaceSelector && matches(peer?.podSelector, nats)) {
          expect(ports).toEqual(['TCP/4222']);
          return 'nats';
        }
        return `unexpected ${JSON.stringify(r)}`;
      });
      expect(reached.sort()).toEqual(['dns', 'nats', 'postgres']);
    });

    it('has what bubblewrap needs, without privileges or added capabilities', () => {
      const pod = podSpecOf(runner());
      const sc = appContainer(objects, 'tool-runner').securityContext;

      expect(pod.hostUsers).toBe(false);
      expect(sc?.procMount).toBe('Unmasked');
      // Docker's default profile plus what bubblewrap needs (deploy/seccomp/tool-runner.json), never Unconfined.
      expect(sc?.seccompProfile).toEqual({ type: 'Localhost', localhostProfile: 'profiles/skald-tool-runner.json' });
      expect(['Unconfined', 'Localhost']).toContain(sc?.appArmorProfile?.type);
      expect(sc?.privileged ?? false).toBe(false);
      expect(sc?.capabilities?.add ?? []).toEqual([]);
      expect(effectiveEnv(objects, appContainer(objects, 'tool-runner'), 'SKALD_SANDBOX')).toBe('bwrap');
      // The reasons are stated next to the settings for operators.
      const source = readFileSync(join(k8sDir, 'base', 'apps', 'tool-runner.yaml'), 'utf8');
      expect(source).toMatch(/CLONE_NEWUSER/);
      expect(source).toMatch(/user namespace/);
    });

    it('is given no credential it does not use (it runs what the model asks for)', () => {
      const c = appContainer(objects, 'tool-runner');
      const secretKeys = (c.env ?? []).flatMap((e) =>
        e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.key] : [],
      );

      // SKALD_METRICS_TOKEN: the scrape credential its /metrics requires like every app's; no sandboxed
      // command sees the runner's environment (sandbox-escape.integration-spec.ts). SKALD_WEB_SEARCH_API_KEY:
      // web_search's backend key, used by the runner itself (docs/tools.md), optional.
      expect(secretKeys.sort()).toEqual([
        'NATS_PASSWORD_TOOL_RUNNER',
        'SKALD_DB_PASSWORD_TOOL_RUNNER',
        'SKALD_METRICS_TOKEN',
        'SKALD_SECRETS_KEY',
        'SKALD_WEB_SEARCH_API_KEY',
      ]);
      expect(c.envFrom?.some((f) => f.secretRef)).toBeFalsy();
      expect(podSpecOf(runner()) as PodSpec & { automountServiceAccountToken?: boolean }).toMatchObject({
        automountServiceAccountToken: false,
      });
    });

    it('mounts the workspaces volume at SKALD_WORKSPACES in every replica', () => {
      const pod = podSpecOf(runner());
      const c = appContainer(objects, 'tool-runner');
      const root = effectiveEnv(objects, c, 'SKALD_WORKSPACES');
      const mount = c.volumeMounts?.find((m) => m.mountPath === root);
      const claim = pod.volumes?.find((v) => v.name === mount?.name)?.persistentVolumeClaim?.claimName;
      const pvc = find(objects, 'PersistentVolumeClaim', claim ?? '(none)');
      const modes = (pvc.spec as { accessModes: string[] }).accessModes;
      const replicas = (runner().spec as { replicas?: number }).replicas ?? 1;

      expect(root).toBe('/workspaces');
      // Several replicas share one volume only if it is ReadWriteMany.
      if (replicas > 1) expect(modes).toEqual(['ReadWriteMany']);
      else expect((runner().spec as { strategy?: { type: string } }).strategy?.type).toBe('Recreate');
      if (overlay === 'prod') expect(modes).toEqual(['ReadWriteMany']);
    });
  });

  it("migrates, then creates each app's Postgres role, as the database owner, from the gateway image the apps run", () => {
    const job = migrationJob(objects);
    const pod = podSpecOf(job) as PodSpec & { restartPolicy?: string };
    const c = pod.containers[0];
    const [shell, flag, script] = c?.command ?? [];

    expect([shell, flag]).toEqual(['sh', '-c']);
    // `roles` runs only after `up` succeeded (the roles are granted the tables `up` creates), and its failure fails
    // the Job.
    expect(shellSteps(script)).toEqual([
      'node libs/persistence/dist/cli.js up',
      'node libs/persistence/dist/cli.js roles',
    ]);
    expect(c?.image).toBe(appContainer(objects, 'gateway').image);
    expect(['OnFailure', 'Never']).toContain(pod.restartPolicy);
    // The same database as the apps, as its owner.
    expect(expandedEnv(c, 'DATABASE_URL')).toBe('postgres://skald:<POSTGRES_PASSWORD>@postgres:5432/skald');
    for (const app of APP_NAMES) {
      const appUrl = String(effectiveEnv(objects, appContainer(objects, app), 'DATABASE_URL'));
      expect(appUrl.slice(appUrl.indexOf('@'))).toBe('@postgres:5432/skald');
      // The role `cli.js roles` provisions for this database's install is the one the app logs in as.
      expect(new URL(appUrl).username).toBe(serviceRoleName(app, instanceOf(String(expandedEnv(c, 'DATABASE_URL')))));
      const name = serviceSecretVar('SKALD_DB_PASSWORD', app);
      expect(secretKeyOf(c, name)).toMatchObject({ key: name });
      expect(secretKeyOf(c, name)?.optional).toBeFalsy();
    }
  });

  it('backs up nightly in prod only: cli.js backup of the database, the workspaces and the sealed secrets', () => {
    const cronJobs = ofKind(objects, 'CronJob');
    if (overlay !== 'prod') {
      expect(cronJobs).toEqual([]);
      return;
    }
    expect(cronJobs.map((o) => o.metadata.name)).toEqual(['skald-backup']);
    const cron = cronJobs[0];
    const spec = cron.spec as { schedule: string; concurrencyPolicy: string };
    expect(spec.schedule).toMatch(/^\S+ \S+ \S+ \S+ \S+$/);
    expect(spec.concurrencyPolicy).toBe('Forbid');
    const pod = podSpecOf(cron) as PodSpec & {
      volumes: Array<{ name: string; persistentVolumeClaim?: { claimName: string; readOnly?: boolean } }>;
    };
    const c = pod.containers[0];
    const [shell, flag, script] = c?.command ?? [];
    expect([shell, flag]).toEqual(['sh', '-c']);
    // The command the docs and `npm run backup` run, into a dated archive on the backups volume, keeping 14.
    expect(shellSteps(script)).toEqual([
      'node libs/persistence/dist/cli.js backup --out "/backups/skald-$(date -u +%Y%m%dT%H%M%SZ).skald-backup" --keep 14',
    ]);
    // The release's own CLI and migrations: the image the migration Job runs.
    expect(c?.image).toBe(podSpecOf(migrationJob(objects)).containers[0]?.image);
    expect(expandedEnv(c, 'DATABASE_URL')).toBe('postgres://skald:<POSTGRES_PASSWORD>@postgres:5432/skald');
    for (const key of ['SKALD_SECRETS_KEY', 'SKALD_JWT_SECRET', 'SKALD_BACKUP_PASSPHRASE'])
      expect(secretKeyOf(c, key)).toEqual({ name: 'skald-secrets', key });
    // The workspaces volume the tool runner writes, read-only, at SKALD_WORKSPACES; the archives on a volume of
    // their own.
    const mount = (name: string) => c?.volumeMounts?.find((m) => m.name === name);
    const claim = (name: string) => pod.volumes.find((v) => v.name === name)?.persistentVolumeClaim;
    expect(claim(mount('workspaces')?.name ?? '')).toEqual({ claimName: 'skald-workspaces', readOnly: true });
    expect(mount('workspaces')).toMatchObject({
      mountPath: effectiveEnv(objects, c, 'SKALD_WORKSPACES'),
      readOnly: true,
    });
    expect(claim('backups')?.claimName).toBe('skald-backups');
    expect(mount('backups')?.mountPath).toBe('/backups');
    expect(find(objects, 'PersistentVolumeClaim', 'skald-backups')).toBeDefined();
  });

  it('upgrades with one `kubectl apply -k`: a new image tag is a new migration Job, the same tag the same Job', () => {
    const tagOf = (image: string): string => image.slice(image.lastIndexOf(':') + 1);
    const gatewayTag = tagOf(appContainer(objects, 'gateway').image);
    const job = migrationJob(objects);
    expect(job.metadata.name).toBe(`skald-migrate-${gatewayTag}`);
    // Re-applying renders the very same Job (a Job's template is immutable: a changed one would need a delete).
    expect(migrationJob(render(overlayDir(overlay), kubectl))).toEqual(job);

    // The operator's upgrade: a new tag under `images:` (prod), or images set for the first time (dev).
    const copy = mkdtempSync(join(tmpdir(), 'skald-k8s-'));
    try {
      cpSync(k8sDir, join(copy, 'k8s'), { recursive: true });
      const file = join(copy, 'k8s', 'overlays', overlay, 'kustomization.yaml');
      const text = readFileSync(file, 'utf8');
      const next =
        overlay === 'prod'
          ? text.replace(/newTag: 0\.1\.0/g, 'newTag: 0.2.0')
          : `${text}\nimages:\n${APP_NAMES.map((a) => `  - name: skald/${a}\n    newTag: dev-2\n`).join('')}`;
      expect(next).not.toBe(text);
      writeFileSync(file, next);
      const upgraded = render(join(copy, 'k8s', 'overlays', overlay), kubectl);
      const tag = overlay === 'prod' ? '0.2.0' : 'dev-2';
      expect(migrationJob(upgraded).metadata.name).toBe(`skald-migrate-${tag}`);
      expect(podSpecOf(migrationJob(upgraded)).containers[0]?.image).toBe(appContainer(upgraded, 'gateway').image);
      for (const app of APP_NAMES) expect(tagOf(appContainer(upgraded, app).image)).toBe(tag);
    } finally {
      rmSync(copy, { recursive: true, force: true });
    }
    // The new release's pods, rolled out by the same apply, start only once their schema is there: each waits as
    // its own role, with its own image's list of migrations.
    for (const app of APP_NAMES) {
      const pod = podSpecOf(find(objects, 'Deployment', app));
      const wait = pod.initContainers?.find((c) => c.name === 'wait-for-schema');
      expect(wait?.command).toEqual(['node', 'libs/persistence/dist/cli.js', 'wait', app]);
      expect(wait?.image).toBe(appContainer(objects, app).image);
      expect(expandedEnv(wait!, 'DATABASE_URL')).toBe(expandedEnv(appContainer(objects, app), 'DATABASE_URL'));
    }
    // The instructions say so: one apply, no delete, no two phases.
    for (const f of ['docs/operations.md', `k8s/overlays/${overlay}/kustomization.yaml`, 'k8s/base/migrate-job.yaml']) {
      const text = readFileSync(join(repoRoot, f), 'utf8');
      expect(text).not.toMatch(/kubectl[^\n]*delete job/);
      expect(text).not.toContain("-l 'app.kubernetes.io/component!=app'");
    }
    expect(readFileSync(join(repoRoot, `k8s/overlays/${overlay}/kustomization.yaml`), 'utf8')).toContain(
      `kubectl apply -k k8s/overlays/${overlay}`,
    );
  });

  it("runs NATS with the generated nats.conf (a user per service) and every service's password from the Secret", () => {
    const pod = podSpecOf(find(objects, 'StatefulSet', 'nats'));
    const nats = pod.containers[0];
    const mount = nats?.volumeMounts?.find((m) => m.mountPath === '/etc/nats');
    const configMap = pod.volumes?.find((v) => v.name === mount?.name)?.configMap?.name ?? '(none)';
    const config = String((find(objects, 'ConfigMap', configMap).data as Record<string, string>)['nats.conf']);

    expect(nats?.args).toEqual(['-c', '/etc/nats/nats.conf']);
    expect(config).toBe(natsServerConfig());
    // Generated with a hash in its name: the StatefulSet's pod changes, so NATS restarts with new permissions.
    expect(configMap).toMatch(/^nats-config-[a-z0-9]{10}$/);
    expect([...config.matchAll(/\buser: "([^"]+)"/g)].map((m) => m[1]).sort()).toEqual([...APP_NAMES].sort());
    for (const app of APP_NAMES) {
      const name = serviceSecretVar('NATS_PASSWORD', app);
      expect(config).toContain(`password: $${name}\n`);
      expect(secretKeyOf(nats, name)).toMatchObject({ key: name });
      expect(secretKeyOf(nats, name)?.optional).toBeFalsy();
    }
  });

  it('runs redis with the noeviction policy BullMQ needs, a password, and a user for each app that uses it', () => {
    const redis = podSpecOf(find(objects, 'StatefulSet', 'redis')).containers[0];
    const command = (redis?.command ?? []).join(' ');

    expect(command).toMatch(/--maxmemory-policy noeviction\b/);
    expect(command).toMatch(/--requirepass "\$REDIS_PASSWORD" /);
    expect(command).toContain(` ${redisServerUserArgs()} `);
    expect(secretKeyOf(redis, 'REDIS_PASSWORD')).toMatchObject({ key: 'REDIS_PASSWORD' });
    for (const service of REDIS_SERVICES) {
      const name = serviceSecretVar('REDIS_PASSWORD', service);
      expect(secretKeyOf(redis, name)).toMatchObject({ key: name });
      expect(secretKeyOf(redis, name)?.optional).toBeFalsy();
    }
  });

  it('reads only Secret keys that secrets.env.example lists, and uses every key it lists', () => {
    const keys = objects
      .filter((x) => WORKLOADS.includes(x.kind))
      .flatMap((o) => [...podSpecOf(o).containers, ...(podSpecOf(o).initContainers ?? [])])
      .flatMap((c) => (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])));

    expect(keys.filter((r) => !r.optional && !EXAMPLE_SECRET_KEYS.includes(r.key)).map((r) => r.key)).toEqual([]);
    // The backup CronJob, and so its passphrase, is prod's only.
    const listed = EXAMPLE_SECRET_KEYS.filter((k) => overlay === 'prod' || k !== 'SKALD_BACKUP_PASSPHRASE');
    expect(listed.filter((k) => !keys.some((r) => r.key === k))).toEqual([]);
  });

  it('reads every secret from the Secret skald-secrets, by key, which scripts/gen-secrets.js makes complete', () => {
    const refs = objects
      .filter((x) => WORKLOADS.includes(x.kind))
      .flatMap((o) => [...podSpecOf(o).containers, ...(podSpecOf(o).initContainers ?? [])])
      .flatMap((c) => (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])));
    const monitorRefs = ofKind(objects, 'ServiceMonitor').flatMap((m) =>
      (
        m.spec as { endpoints: { bearerTokenSecret?: { name: string; key: string; optional?: boolean } }[] }
      ).endpoints.flatMap((e) => e.bearerTokenSecret ?? []),
    );

    expect(refs.length).toBeGreaterThan(0);
    expect(new Set([...refs, ...monitorRefs].map((r) => r.name))).toEqual(new Set(['skald-secrets']));
    // No overlay renders the Secret: an apply never replaces the values it was created with.
    expect(ofKind(objects, 'Secret')).toEqual([]);
    const generated = genSecrets.secretData({});
    const secret = JSON.parse(
      execFileSync(
        process.execPath,
        [join(repoRoot, 'scripts', 'gen-secrets.js'), '--namespace', overlay === 'prod' ? 'skald' : 'skald-dev'],
        {
          encoding: 'utf8',
          env: { PATH: process.env.PATH },
        },
      ),
    ) as K8sObject & { stringData: Record<string, string> };
    expect(schemaErrors(secret)).toEqual([]);
    expect(secret.metadata).toMatchObject({ name: 'skald-secrets', namespace: objects[0]?.metadata.namespace });
    for (const r of [...refs, ...monitorRefs]) {
      if (r.optional) expect(genSecrets.PROVIDED).toContain(r.key);
      else {
        expect(Object.keys(secret.stringData)).toContain(r.key);
        // URL-safe: embedded in DATABASE_URL / REDIS_URL.
        expect(secret.stringData[r.key]).toMatch(/^[A-Za-z0-9._-]{32,}$/);
      }
    }
    // Fresh values each run, and what the operator provides is read from the environment only.
    expect(genSecrets.secretData({}).POSTGRES_PASSWORD).not.toBe(generated.POSTGRES_PASSWORD);
    expect(Object.keys(generated).filter((k) => genSecrets.PROVIDED.includes(k))).toEqual([]);
    expect(genSecrets.secretData({ OPENAI_API_KEY: 'sk-test' }).OPENAI_API_KEY).toBe('sk-test');
  });
});

describe('secrets in the repository', () => {
  const yamlFiles = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? yamlFiles(join(dir, e.name)) : /\.ya?ml$/.test(e.name) ? [join(dir, e.name)] : [],
    );

  it('the base renders no Secret, and no manifest under k8s/ is a Secret with data', () => {
    const base = kubectl ? renderWithKubectl(kubectl, join(k8sDir, 'base')) : buildKustomization(join(k8sDir, 'base'));
    const literal = yamlFiles(k8sDir).flatMap((f) =>
      parseYamlStream(readFileSync(f, 'utf8'), f)
        .filter((o) => o.kind === 'Secret' && (o.data !== undefined || o.stringData !== undefined))
        .map(() => relative(repoRoot, f)),
    );

    expect(ofKind(base, 'Secret')).toEqual([]);
    expect(literal).toEqual([]);
  });

  it("the prod overlay's secrets.env is gitignored and its example holds no value", () => {
    const prod = join(k8sDir, 'overlays', 'prod');
    const ignore = readFileSync(join(prod, '.gitignore'), 'utf8').split('\n');
    const example = readFileSync(join(prod, 'secrets.env.example'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '' && !l.startsWith('#'));

    expect(ignore).toContain('secrets.env');
    expect(example.length).toBeGreaterThan(0);
    expect(example.filter((l) => !/^[A-Z_]+=$/.test(l))).toEqual([]);
  });
});

describe('k8s/base/infra/nats.conf', () => {
  it('is what scripts/gen-service-auth.js makes of libs/contracts/src/access.ts', () => {
    // When this fails: `npm run build && node scripts/gen-service-auth.js`, and commit the file.
    expect(readFileSync(join(k8sDir, 'base', 'infra', 'nats.conf'), 'utf8')).toBe(natsServerConfig());
    expect(() =>
      execFileSync(process.execPath, [join(repoRoot, 'scripts', 'gen-service-auth.js'), '--check'], { stdio: 'pipe' }),
    ).not.toThrow();
  });
});

describe('the schema validation', () => {
  it('rejects what the API server would reject', () => {
    const broken = structuredClone(find(rendered.prod, 'Deployment', 'gateway'));
    const pod = podSpecOf(broken) as unknown as Json & { containers: Json[] };
    pod.containers[0].ports = [{ containerPort: 'http' }];
    delete pod.containers[0].name;
    const hpa = structuredClone(find(rendered.prod, 'HorizontalPodAutoscaler', 'gateway'));
    delete (hpa.spec as Json).maxReplicas;

    const errors = [...schemaErrors(broken), ...schemaErrors(hpa)].join('\n');
    expect(errors).toMatch(/containerPort must be integer/);
    expect(errors).toMatch(/must have required property '?name'?/);
    expect(errors).toMatch(/must have required property '?maxReplicas'?/);
    expect(schemaErrors({ apiVersion: 'example.com/v1', kind: 'Widget', metadata: { name: 'w' } })).toEqual([
      'no schema for example.com/v1 Widget',
    ]);
  });
});

/** The skald_* metric names the apps register (prom-client `name:` in the sources of apps/ and libs/). */
function registeredMetrics(): Set<string> {
  const sources = (dir: string): string[] =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory()
        ? e.name === 'node_modules' || e.name === 'dist'
          ? []
          : sources(join(dir, e.name))
        : e.name.endsWith('.ts') && !/\.(spec|integration-spec|serial-spec|e2e-spec)\.ts$/.test(e.name)
          ? [join(dir, e.name)]
          : [],
    );
  return new Set(
    [...sources(join(repoRoot, 'apps')), ...sources(join(repoRoot, 'libs'))].flatMap((f) =>
      [...readFileSync(f, 'utf8').matchAll(/name: '(skald_[a-z_]+)'/g)].map((m) => m[1] ?? ''),
    ),
  );
}

describe('scraping (k8s/components/monitoring)', () => {
  const objects = rendered.prod;
  type Monitor = {
    spec: {
      selector: LabelSelector;
      endpoints: { port: string; path: string; bearerTokenSecret?: { name: string; key: string } }[];
    };
  };

  it('has a ServiceMonitor per app, on a port its Service has, in prod only', () => {
    expect(ofKind(rendered.dev, 'ServiceMonitor')).toEqual([]);
    for (const app of APP_NAMES) {
      const monitor = find(objects, 'ServiceMonitor', app) as unknown as Monitor;
      const service = find(objects, 'Service', app);
      expect(matches(monitor.spec.selector, service.metadata.labels ?? {})).toBe(true);
      const others = ofKind(objects, 'Service').filter((x) => x !== service);
      expect(others.filter((x) => matches(monitor.spec.selector, x.metadata.labels ?? {}))).toEqual([]);
      const ports = (service.spec as { ports: { name: string }[] }).ports.map((p) => p.name);
      for (const e of monitor.spec.endpoints) {
        expect(ports).toContain(e.port);
        expect(e.path).toBe('/metrics');
      }
    }
  });

  it('sends every app the scrape token it requires on /metrics, and never trusts loopback in any overlay', () => {
    for (const app of APP_NAMES) {
      // the monitor sends the token of the Secret the app reads it from, on every endpoint
      const endpoints = (find(objects, 'ServiceMonitor', app) as unknown as Monitor).spec.endpoints;
      expect(endpoints.length).toBeGreaterThan(0);
      for (const e of endpoints) {
        expect({ app, token: e.bearerTokenSecret }).toEqual({
          app,
          token: { name: 'skald-secrets', key: 'SKALD_METRICS_TOKEN' },
        });
      }
      expect(APP_ENV[app].has('SKALD_METRICS_TOKEN')).toBe(true);
      expect(APP_ENV[app].has('SKALD_METRICS_TRUST_LOOPBACK')).toBe(true);
      for (const overlay of OVERLAYS) {
        const o = rendered[overlay];
        const c = appContainer(o, app);
        expect({ app, overlay, ref: secretKeyOf(c, 'SKALD_METRICS_TOKEN') }).toMatchObject({
          app,
          overlay,
          ref: { name: 'skald-secrets', key: 'SKALD_METRICS_TOKEN' },
        });
        expect(secretKeyOf(c, 'SKALD_METRICS_TOKEN')?.optional).toBeFalsy();
        // loopback is not trusted without the token (unset: the default, `off`)
        expect({ app, overlay, trust: effectiveEnv(o, c, 'SKALD_METRICS_TRUST_LOOPBACK') }).toEqual({
          app,
          overlay,
          trust: undefined,
        });
      }
    }
    const annotated = objects.filter((o) =>
      JSON.stringify((o.spec as { template?: { metadata?: unknown } } | undefined)?.template?.metadata ?? {}).includes(
        'prometheus.io/',
      ),
    );
    expect(annotated.map((o) => o.metadata.name)).toEqual([]);
  });
});

describe('autoscaling on load, not CPU alone (k8s/components/autoscaling-metrics)', () => {
  type Metric = { type: string; pods?: { metric: { name: string } }; external?: { metric: { name: string } } };
  const metricsOf = (objects: K8sObject[], name: string): Metric[] =>
    (find(objects, 'HorizontalPodAutoscaler', name).spec as { metrics: Metric[] }).metrics;
  const names = (ms: Metric[]): string[] =>
    ms.flatMap((m) => m.pods?.metric.name ?? m.external?.metric.name ?? `${m.type}`);

  it('scales session workers on turn concurrency and inbox depth, gateways on sockets, with CPU kept (prod)', () => {
    const worker = metricsOf(rendered.prod, 'session-worker');
    expect(names(worker)).toEqual(['Resource', 'skald_sessions_driving', 'skald_inbox_pending']);
    // One deployment-wide count: External (averaged over the replicas), not a per-pod sum.
    expect(worker.find((m) => m.external)?.external?.metric.name).toBe('skald_inbox_pending');
    expect(names(metricsOf(rendered.prod, 'gateway'))).toEqual(['Resource', 'skald_ws_connections']);
  });

  it('reads only metrics the apps export, which docs/operations.md lists', () => {
    const registered = registeredMetrics();
    const operations = readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8');
    const used = ['gateway', 'session-worker']
      .flatMap((h) => names(metricsOf(rendered.prod, h)))
      .filter((n) => n.startsWith('skald_'));
    expect(used.length).toBe(3);
    for (const m of used) {
      expect(registered).toContain(m);
      expect(operations).toContain(`| \`${m}`);
      expect(operations).toContain(m);
    }
  });

  it('stays on CPU where no metrics adapter is assumed (dev)', () => {
    for (const h of ['gateway', 'session-worker']) expect(names(metricsOf(rendered.dev, h))).toEqual(['Resource']);
  });
});

describe('alert rules (k8s/components/monitoring)', () => {
  const rule = find(rendered.prod, 'PrometheusRule', 'skald');
  const alerts = (rule.spec as { groups: { rules: { alert: string; expr: string }[] }[] }).groups.flatMap(
    (g) => g.rules,
  );

  it('are part of prod only (dev clusters may lack the Prometheus Operator)', () => {
    expect(alerts.length).toBeGreaterThan(0);
    expect(ofKind(rendered.dev, 'PrometheusRule')).toEqual([]);
  });

  it('use only skald_* metrics that the apps register', () => {
    const registered = registeredMetrics();
    const used = new Set(
      alerts.flatMap((a) =>
        [...a.expr.matchAll(/\b(skald_[a-z_]+)/g)].map((m) => (m[1] ?? '').replace(/_(bucket|sum|count)$/, '')),
      ),
    );

    expect(registered.size).toBeGreaterThan(0);
    expect([...used].filter((m) => !registered.has(m))).toEqual([]);
    // The metric that means users see a turn that never ends is alerted on.
    expect(used).toContain('skald_stuck_turns');
  });

  it('each has a summary and a severity, and is explained in docs/operations.md', () => {
    const operations = readFileSync(join(repoRoot, 'docs', 'operations.md'), 'utf8');
    const full = (rule.spec as { groups: { rules: Json[] }[] }).groups.flatMap((g) => g.rules) as {
      alert: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }[];

    for (const a of full) {
      expect(a.labels?.severity).toMatch(/^(critical|warning|info)$/);
      expect(a.annotations?.summary).toBeTruthy();
      expect(operations).toContain(`\`${a.alert}\``);
    }
  });
});

(kubectl ? describe : describe.skip)('test/k8s/kustomize.ts, the resolver used without kubectl', () => {
  /** Generated names carry a content hash, computed differently by each: compare them without it. */
  const normalise = (objects: K8sObject[]): Record<string, unknown> =>
    Object.fromEntries(
      objects.map((o) => {
        const text = JSON.stringify(o).replace(/\b(skald-secrets|nats-config)-[a-z0-9]{10}\b/g, '$1-HASH');
        const copy = JSON.parse(text) as K8sObject;
        return [`${copy.kind}/${copy.metadata.namespace ?? ''}/${copy.metadata.name}`, copy];
      }),
    );

  it.each([...OVERLAYS, 'base'])('renders %s exactly as kubectl kustomize does', (name) => {
    const dir = name === 'base' ? join(k8sDir, 'base') : overlayDir(name);

    expect(normalise(buildKustomization(dir))).toEqual(normalise(renderWithKubectl(kubectl ?? '', dir)));
  });
});
