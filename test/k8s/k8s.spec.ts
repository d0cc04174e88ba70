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
import { ApprovalConfigSchema } from '../../apps/approval-service/src/config';
import { GatewayConfigSchema } from '../../apps/gateway/src/config';
import { SchedulerConfigSchema } from '../../apps/scheduler/src/config';
import { WorkerConfigSchema } from '../../apps/session-worker/src/config';
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
import { APP_NAMES, APPS, type AppName, shellSteps, usesRedis } from '../support/deployment';

/** Env vars each app reads: its config schema, plus what libs/llm reads in the session worker. */
const APP_ENV: Record<AppName, Set<string>> = {
  gateway: new Set(Object.keys(GatewayConfigSchema.shape)),
  'session-worker': new Set([
    ...Object.keys(WorkerConfigSchema.shape),
    'OPENAI_BASE_URL',
    'OPENAI_API_KEY',
    'SKALD_LLM_MODEL',
    'SKALD_LLM_CLIENTS',
  ]),
  'approval-service': new Set(Object.keys(ApprovalConfigSchema.shape)),
  'tool-runner': new Set(Object.keys(ToolRunnerConfigSchema.shape)),
  scheduler: new Set(Object.keys(SchedulerConfigSchema.shape)),
};
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
  volumeMounts?: { name: string; mountPath: string }[];
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

/** A copy of k8s/ with the operator's gitignored secrets.env written, as the prod overlay expects. */
function withOperatorFiles(): string {
  const dir = mkdtempSync(join(tmpdir(), 'skald-k8s-'));
  cpSync(k8sDir, join(dir, 'k8s'), { recursive: true });
  const example = readFileSync(join(k8sDir, 'overlays', 'prod', 'secrets.env.example'), 'utf8');
  const filled = example.replace(/^([A-Z_]+)=$/gm, (_m, key: string) => `${key}=test-only-${key.toLowerCase()}`);
  writeFileSync(join(dir, 'k8s', 'overlays', 'prod', 'secrets.env'), filled);
  return dir;
}

const workDir = withOperatorFiles();
afterAll(() => rmSync(workDir, { recursive: true, force: true }));
const overlayDir = (overlay: string): string => join(workDir, 'k8s', 'overlays', overlay);

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
function ofKind(objects: K8sObject[], kind: string): K8sObject[] {
  return objects.filter((o) => o.kind === kind);
}
function podSpecOf(o: K8sObject): PodSpec {
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
    expect(ids).toContain('Job/skald-migrate');
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
    for (const o of objects.filter((x) => ['Deployment', 'StatefulSet', 'Job'].includes(x.kind))) {
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
      .filter((x) => ['Deployment', 'StatefulSet', 'Job'].includes(x.kind))
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

      expect(secretKeys.sort()).toEqual([
        'NATS_PASSWORD_TOOL_RUNNER',
        'SKALD_DB_PASSWORD_TOOL_RUNNER',
        'SKALD_SECRETS_KEY',
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
    const job = find(objects, 'Job', 'skald-migrate');
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
      const name = serviceSecretVar('SKALD_DB_PASSWORD', app);
      expect(secretKeyOf(c, name)).toMatchObject({ key: name });
      expect(secretKeyOf(c, name)?.optional).toBeFalsy();
    }
  });

  it("applies the migration Job and all it needs before any app: `kubectl apply -l 'app.kubernetes.io/component!=app'`", () => {
    const first = objects.filter((o) => o.metadata.labels?.['app.kubernetes.io/component'] !== 'app');
    const has = (kind: string, name: string): boolean => first.some((o) => o.kind === kind && o.metadata.name === name);
    const job = podSpecOf(find(objects, 'Job', 'skald-migrate')).containers[0];
    const secretNames = (job?.env ?? []).flatMap((e) =>
      e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef.name] : [],
    );

    expect(has('Job', 'skald-migrate')).toBe(true);
    expect(has('StatefulSet', 'postgres') && has('Service', 'postgres')).toBe(true);
    for (const f of job?.envFrom ?? []) if (f.configMapRef) expect(has('ConfigMap', f.configMapRef.name)).toBe(true);
    if (overlay === 'prod') for (const name of secretNames) expect(has('Secret', name)).toBe(true);
    // No app starts before the migration: every app Deployment is left for the second apply.
    expect(first.filter((o) => o.kind === 'Deployment').map((o) => o.metadata.name)).toEqual([]);
    for (const file of ['docs/operations.md', 'k8s/overlays/prod/kustomization.yaml']) {
      expect(readFileSync(join(repoRoot, file), 'utf8')).toContain(
        "kubectl apply -k k8s/overlays/prod -l 'app.kubernetes.io/component!=app'",
      );
    }
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
      .filter((x) => ['Deployment', 'StatefulSet', 'Job'].includes(x.kind))
      .flatMap((o) => [...podSpecOf(o).containers, ...(podSpecOf(o).initContainers ?? [])])
      .flatMap((c) => (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])));

    expect(keys.filter((r) => !r.optional && !EXAMPLE_SECRET_KEYS.includes(r.key)).map((r) => r.key)).toEqual([]);
    expect(EXAMPLE_SECRET_KEYS.filter((k) => !keys.some((r) => r.key === k))).toEqual([]);
  });

  it('reads every secret from the Secret skald-secrets, by key', () => {
    const refs = objects
      .filter((x) => ['Deployment', 'StatefulSet', 'Job'].includes(x.kind))
      .flatMap((o) => [...podSpecOf(o).containers, ...(podSpecOf(o).initContainers ?? [])])
      .flatMap((c) => (c.env ?? []).flatMap((e) => (e.valueFrom?.secretKeyRef ? [e.valueFrom.secretKeyRef] : [])));
    const secrets = ofKind(objects, 'Secret');

    expect(refs.length).toBeGreaterThan(0);
    expect(new Set(refs.map((r) => r.name.replace(/-[a-z0-9]{10}$/, '')))).toEqual(new Set(['skald-secrets']));
    if (overlay === 'prod') {
      // Generated from secrets.env: every reference follows the generated (hashed) name and finds its key.
      expect(secrets).toHaveLength(1);
      const data = (secrets[0]?.data ?? {}) as Record<string, string>;
      for (const r of refs) {
        expect(r.name).toBe(secrets[0]?.metadata.name);
        if (!r.optional) expect(Object.keys(data)).toContain(r.key);
      }
    } else {
      // The operator creates it by hand.
      expect(secrets).toEqual([]);
    }
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
    const sources = (dir: string): string[] =>
      readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
        e.isDirectory()
          ? e.name === 'node_modules' || e.name === 'dist'
            ? []
            : sources(join(dir, e.name))
          : e.name.endsWith('.ts') && !/\.(spec|integration-spec|e2e-spec)\.ts$/.test(e.name)
            ? [join(dir, e.name)]
            : [],
      );
    const registered = new Set(
      [...sources(join(repoRoot, 'apps')), ...sources(join(repoRoot, 'libs'))].flatMap((f) =>
        [...readFileSync(f, 'utf8').matchAll(/name: '(skald_[a-z_]+)'/g)].map((m) => m[1]),
      ),
    );
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
    const dir = name === 'base' ? join(workDir, 'k8s', 'base') : overlayDir(name);

    expect(normalise(buildKustomization(dir))).toEqual(normalise(renderWithKubectl(kubectl ?? '', dir)));
  });
});
