// Renders a kustomization the way `kubectl kustomize` does, for test/k8s/k8s.integration-spec.ts.
//
// `kubectl kustomize` is used when it is installed (CI machines have it). Without it, `buildKustomization` resolves
// the subset of kustomize that k8s/ uses (resources, components, namespace, labels, images, replicas, strategic
// merge patches, secretGenerator from env files, configMapGenerator from files, replacements of one delimited part of
// a field) and refuses anything else by name, so a manifest change that
// needs more of kustomize fails here instead of being rendered wrongly. The spec compares both renderings when
// kubectl is present.
import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, delimiter, join, resolve } from 'node:path';
import { parseAllDocuments } from 'yaml';

export type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
};

type Json = unknown;
type JsonMap = Record<string, Json>;

/** The kubectl binary on PATH (or /usr/bin/kubectl), or null. SKALD_KUBECTL=none tries the resolver alone. */
export function findKubectl(): string | null {
  if (process.env.SKALD_KUBECTL === 'none') return null;
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/bin', '/usr/local/bin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const candidate = join(dir, 'kubectl');
    try {
      if (statSync(candidate).isFile()) return candidate;
    } catch {
      /* not here */
    }
  }
  return null;
}

export function parseYamlStream(text: string, source: string): K8sObject[] {
  const out: K8sObject[] = [];
  for (const doc of parseAllDocuments(text)) {
    if (doc.errors.length > 0) throw new Error(`${source}: ${doc.errors.map((e) => e.message).join('; ')}`);
    const value = doc.toJS() as unknown;
    if (value === null || value === undefined) continue;
    out.push(value as K8sObject);
  }
  return out;
}

export function renderWithKubectl(kubectl: string, dir: string): K8sObject[] {
  const text = execFileSync(kubectl, ['kustomize', dir], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });
  return parseYamlStream(text, `kubectl kustomize ${dir}`);
}

/** `kubectl kustomize <dir>` when kubectl exists, else the built-in resolver. */
export function render(dir: string, kubectl: string | null = findKubectl()): K8sObject[] {
  return kubectl ? renderWithKubectl(kubectl, dir) : buildKustomization(dir);
}

// ---------------------------------------------------------------------------------------------------------------
// The built-in resolver.

const SUPPORTED_FIELDS = new Set([
  'apiVersion',
  'kind',
  'namespace',
  'resources',
  'components',
  'labels',
  'images',
  'replicas',
  'patches',
  'secretGenerator',
  'configMapGenerator',
  'replacements',
]);

interface ReplacementOptions {
  delimiter?: string;
  index?: number;
}
interface Replacement {
  source: { kind: string; name: string; fieldPath: string; options?: ReplacementOptions };
  targets: { select: { kind: string; name: string }; fieldPaths: string[]; options?: ReplacementOptions }[];
}

interface Kustomization {
  replacements?: Replacement[];
  kind?: string;
  namespace?: string;
  resources?: string[];
  components?: string[];
  labels?: { pairs: Record<string, string>; includeSelectors?: boolean; includeTemplates?: boolean }[];
  images?: { name: string; newName?: string; newTag?: string }[];
  replicas?: { name: string; count: number }[];
  patches?: { path?: string; patch?: string; target?: unknown }[];
  secretGenerator?: { name: string; envs?: string[]; literals?: string[]; files?: string[]; type?: string }[];
  configMapGenerator?: {
    name: string;
    files?: string[];
    envs?: string[];
    literals?: string[];
    options?: { labels?: Record<string, string>; [key: string]: unknown };
  }[];
}

function isMap(v: Json): v is JsonMap {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function isList(v: Json): v is Json[] {
  return Array.isArray(v);
}

function readKustomization(dir: string): Kustomization {
  const file = ['kustomization.yaml', 'kustomization.yml', 'Kustomization'].map((f) => join(dir, f)).find(existsSync);
  if (!file) throw new Error(`${dir}: no kustomization.yaml`);
  const k = parseYamlStream(readFileSync(file, 'utf8'), file)[0] as unknown as Kustomization & JsonMap;
  for (const key of Object.keys(k)) {
    if (!SUPPORTED_FIELDS.has(key))
      throw new Error(`${file}: "${key}" is not supported by test/k8s/kustomize.ts; extend it or use kubectl`);
  }
  return k;
}

/** The merge keys of the lists a strategic merge patch merges item by item (from the Kubernetes API types). */
const MERGE_KEYS: Record<string, string> = {
  containers: 'name',
  initContainers: 'name',
  env: 'name',
  volumes: 'name',
  volumeMounts: 'mountPath',
  ports: 'containerPort',
};

function strategicMerge(target: Json, patch: Json, field = ''): Json {
  if (isMap(patch) && isMap(target)) {
    const out: JsonMap = { ...target };
    for (const [key, value] of Object.entries(patch)) {
      if (value === null) delete out[key];
      else out[key] = key in out ? strategicMerge(out[key], value, key) : structuredClone(value);
    }
    return out;
  }
  const mergeKey = MERGE_KEYS[field];
  if (mergeKey && isList(patch) && isList(target)) {
    // As kubectl orders them: the patch's items first (merged into their originals), then the untouched ones.
    const keyOf = (item: Json): Json => (isMap(item) ? item[mergeKey] : undefined);
    const patched = patch.map((item) => {
      const original = target.find((t) => keyOf(item) !== undefined && keyOf(t) === keyOf(item));
      return original === undefined ? structuredClone(item) : strategicMerge(original, item);
    });
    const rest = target.filter((t) => !patch.some((item) => keyOf(item) !== undefined && keyOf(item) === keyOf(t)));
    return [...patched, ...rest.map((t) => structuredClone(t))];
  }
  return structuredClone(patch);
}

function podSpecs(obj: K8sObject): JsonMap[] {
  const spec = obj.spec as JsonMap | undefined;
  if (!spec) return [];
  if (obj.kind === 'CronJob') {
    const job = (spec.jobTemplate as JsonMap | undefined)?.spec as JsonMap | undefined;
    const pod = (job?.template as JsonMap | undefined)?.spec;
    return isMap(pod) ? [pod] : [];
  }
  const pod = (spec.template as JsonMap | undefined)?.spec;
  return isMap(pod) ? [pod] : obj.kind === 'Pod' ? [spec] : [];
}

function containersOf(pod: JsonMap): JsonMap[] {
  return [
    ...((pod.initContainers as JsonMap[] | undefined) ?? []),
    ...((pod.containers as JsonMap[] | undefined) ?? []),
  ];
}

function imageName(image: string): { name: string; rest: string } {
  const at = image.indexOf('@');
  if (at >= 0) return { name: image.slice(0, at), rest: image.slice(at) };
  const colon = image.lastIndexOf(':');
  if (colon > image.lastIndexOf('/')) return { name: image.slice(0, colon), rest: image.slice(colon) };
  return { name: image, rest: '' };
}

function parseEnvFile(path: string): [string, string][] {
  const pairs: [string, string][] = [];
  for (const raw of readFileSync(path, 'utf8').split('\n')) {
    const line = raw.replace(/\r$/, '');
    if (line.trim() === '' || line.trimStart().startsWith('#')) continue;
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`${path}: "${line}" is not KEY=VALUE`);
    pairs.push([line.slice(0, eq).trim(), line.slice(eq + 1)]);
  }
  return pairs;
}

/** The name reference fields of a pod spec that point at a Secret. */
function renameSecretRefs(pod: JsonMap, from: string, to: string): void {
  for (const c of containersOf(pod)) {
    for (const e of (c.env as JsonMap[] | undefined) ?? []) {
      const ref = (e.valueFrom as JsonMap | undefined)?.secretKeyRef as JsonMap | undefined;
      if (ref?.name === from) ref.name = to;
    }
    for (const e of (c.envFrom as JsonMap[] | undefined) ?? []) {
      const ref = e.secretRef as JsonMap | undefined;
      if (ref?.name === from) ref.name = to;
    }
  }
  for (const v of (pod.volumes as JsonMap[] | undefined) ?? []) {
    const s = v.secret as JsonMap | undefined;
    if (s?.secretName === from) s.secretName = to;
  }
}

/** The name reference fields of a pod spec that point at a ConfigMap. */
function renameConfigMapRefs(pod: JsonMap, from: string, to: string): void {
  for (const c of containersOf(pod)) {
    for (const e of (c.env as JsonMap[] | undefined) ?? []) {
      const ref = (e.valueFrom as JsonMap | undefined)?.configMapKeyRef as JsonMap | undefined;
      if (ref?.name === from) ref.name = to;
    }
    for (const e of (c.envFrom as JsonMap[] | undefined) ?? []) {
      const ref = e.configMapRef as JsonMap | undefined;
      if (ref?.name === from) ref.name = to;
    }
  }
  for (const v of (pod.volumes as JsonMap[] | undefined) ?? []) {
    const m = v.configMap as JsonMap | undefined;
    if (m?.name === from) m.name = to;
  }
}

/** A generated object's name: kustomize appends a hash of the content (computed differently here: the spec compares without it). */
function hashedName(name: string, content: JsonMap): string {
  return `${name}-${createHash('sha256').update(JSON.stringify(content)).digest('hex').slice(0, 10)}`;
}

function loadResource(base: string, entry: string): K8sObject[] {
  const path = resolve(base, entry);
  if (statSync(path).isDirectory()) return buildKustomization(path);
  return parseYamlStream(readFileSync(path, 'utf8'), path);
}

function applyKustomization(dir: string, k: Kustomization, objects: K8sObject[]): K8sObject[] {
  let out = objects;
  for (const entry of k.resources ?? []) out = out.concat(loadResource(dir, entry));
  for (const entry of k.components ?? []) {
    const componentDir = resolve(dir, entry);
    const component = readKustomization(componentDir);
    if (component.kind !== 'Component') throw new Error(`${componentDir} is not a kustomize Component`);
    out = applyKustomization(componentDir, component, out);
  }

  for (const gen of k.secretGenerator ?? []) {
    if (gen.files || gen.literals) throw new Error(`${dir}: secretGenerator supports envs only here`);
    const data: Record<string, string> = {};
    for (const env of gen.envs ?? []) {
      for (const [key, value] of parseEnvFile(resolve(dir, env))) data[key] = Buffer.from(value).toString('base64');
    }
    const type = gen.type ?? 'Opaque';
    const name = hashedName(gen.name, { data, kind: 'Secret', name: gen.name, type });
    out.push({ apiVersion: 'v1', kind: 'Secret', metadata: { name }, type, data });
    for (const obj of out) for (const pod of podSpecs(obj)) renameSecretRefs(pod, gen.name, name);
  }

  for (const gen of k.configMapGenerator ?? []) {
    if (gen.envs || gen.literals) throw new Error(`${dir}: configMapGenerator supports files only here`);
    const { labels, ...rest } = gen.options ?? {};
    if (Object.keys(rest).length > 0) throw new Error(`${dir}: configMapGenerator options other than labels`);
    const data: Record<string, string> = {};
    for (const file of gen.files ?? []) {
      if (file.includes('=')) throw new Error(`${dir}: configMapGenerator "key=path" files are not supported here`);
      data[basename(file)] = readFileSync(resolve(dir, file), 'utf8');
    }
    const name = hashedName(gen.name, { data, kind: 'ConfigMap', name: gen.name });
    out.push({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, ...(labels ? { labels } : {}) }, data });
    for (const obj of out) for (const pod of podSpecs(obj)) renameConfigMapRefs(pod, gen.name, name);
  }

  for (const p of k.patches ?? []) {
    if (!p.path || p.patch || p.target)
      throw new Error(`${dir}: only strategic merge patches given by path are supported`);
    for (const patch of parseYamlStream(readFileSync(resolve(dir, p.path), 'utf8'), p.path)) {
      const at = out.findIndex((o) => o.kind === patch.kind && o.metadata.name === patch.metadata.name);
      if (at < 0) throw new Error(`${p.path}: no ${patch.kind} ${patch.metadata.name} to patch`);
      out[at] = strategicMerge(out[at], patch) as K8sObject;
    }
  }

  for (const r of k.replicas ?? []) {
    const target = out.find((o) => ['Deployment', 'StatefulSet'].includes(o.kind) && o.metadata.name === r.name);
    if (!target) throw new Error(`${dir}: replicas for unknown workload ${r.name}`);
    (target.spec as JsonMap).replicas = r.count;
  }

  for (const img of k.images ?? []) {
    for (const obj of out) {
      for (const pod of podSpecs(obj)) {
        for (const c of containersOf(pod)) {
          const { name, rest } = imageName(String(c.image));
          if (name !== img.name) continue;
          c.image = `${img.newName ?? name}${img.newTag ? `:${img.newTag}` : rest}`;
        }
      }
    }
  }

  for (const l of k.labels ?? []) {
    if (l.includeSelectors || l.includeTemplates) throw new Error(`${dir}: labels into selectors or templates`);
    for (const obj of out) obj.metadata.labels = { ...(obj.metadata.labels ?? {}), ...l.pairs };
  }

  if (k.namespace) for (const obj of out) obj.metadata.namespace = k.namespace;
  // After the images: kustomize runs replacements last.
  applyReplacements(dir, k.replacements ?? [], out);
  return out;
}

/** Splits a kustomize field path (`spec.template.spec.containers.[name=gateway].image`) into its steps. */
function fieldSteps(fieldPath: string): string[] {
  return fieldPath.split(/\.(?![^[]*\])/);
}

/** The container map or list item a step selects, or undefined. */
function step(node: Json, s: string): Json {
  const sel = /^\[([^=]+)=(.*)\]$/.exec(s);
  if (sel) return Array.isArray(node) ? node.find((x) => isMap(x) && String(x[sel[1]]) === sel[2]) : undefined;
  return isMap(node) ? node[s] : undefined;
}

function getField(obj: K8sObject, fieldPath: string): Json {
  return fieldSteps(fieldPath).reduce<Json>((n, s) => step(n, s), obj);
}

function setField(obj: K8sObject, fieldPath: string, value: string): void {
  const steps = fieldSteps(fieldPath);
  const parent = steps.slice(0, -1).reduce<Json>((n, s) => step(n, s), obj);
  if (!isMap(parent)) throw new Error(`replacements: no ${fieldPath} in ${obj.kind} ${obj.metadata.name}`);
  parent[steps[steps.length - 1]] = value;
}

function applyReplacements(dir: string, replacements: Replacement[], out: K8sObject[]): void {
  for (const r of replacements) {
    const source = out.find((o) => o.kind === r.source.kind && o.metadata.name === r.source.name);
    if (!source) throw new Error(`${dir}: replacement source ${r.source.kind} ${r.source.name} not found`);
    const raw = getField(source, r.source.fieldPath);
    if (typeof raw !== 'string') throw new Error(`${dir}: replacement source ${r.source.fieldPath} is not a string`);
    const from = r.source.options;
    const value: string = from?.delimiter === undefined ? raw : (raw.split(from.delimiter)[from.index ?? 0] ?? '');
    for (const t of r.targets) {
      for (const obj of out.filter((o) => o.kind === t.select.kind && o.metadata.name === t.select.name)) {
        for (const fp of t.fieldPaths) {
          const { delimiter, index = 0 } = t.options ?? {};
          const current = getField(obj, fp);
          if (delimiter === undefined) setField(obj, fp, value);
          else {
            const parts = String(current).split(delimiter);
            if (index < 0 || index >= parts.length) throw new Error(`${dir}: replacement index ${index} outside ${fp}`);
            parts[index] = value;
            setField(obj, fp, parts.join(delimiter));
          }
        }
      }
    }
  }
}

/** The built-in resolver: the objects `kubectl kustomize dir` prints, in no particular order. */
export function buildKustomization(dir: string): K8sObject[] {
  const k = readKustomization(dir);
  if (k.kind === 'Component') throw new Error(`${dir} is a Component, not a Kustomization`);
  return applyKustomization(dir, k, []);
}

export const repoRoot = resolve(__dirname, '..', '..');
export const k8sDir = join(repoRoot, 'k8s');
