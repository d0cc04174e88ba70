#!/usr/bin/env node
'use strict';
// Prints the Secret `skald-secrets` every Skald pod reads, with a fresh random value for each key that
// k8s/overlays/prod/secrets.env.example lists (the list lives there; test/k8s checks that the manifests read exactly
// those keys, and every secret setting of the apps' config schemas from the Secret). Values the operator provides (the
// LLM's key, the single sign-on providers) come from the environment and are left out when unset.
//
//   node scripts/gen-secrets.js | kubectl create -f -                      # once, before the first apply (namespace skald)
//   node scripts/gen-secrets.js --namespace skald-dev | kubectl create -f -
//   node scripts/gen-secrets.js --env > my-secrets.env                     # KEY=VALUE lines instead
//
// `kubectl create` refuses to overwrite an existing Secret, and `kubectl apply -k` never touches it: the values
// stay across upgrades. Rotating one value: docs/operations.md, "Secrets".
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');

const EXAMPLE = path.join(__dirname, '..', 'k8s', 'overlays', 'prod', 'secrets.env.example');
/** Keys whose values only the operator knows: taken from the environment, omitted when unset. */
const PROVIDED = ['OPENAI_API_KEY', 'SKALD_LLM_CLIENTS', 'SKALD_OIDC_PROVIDERS', 'SKALD_WEB_SEARCH_API_KEY'];

/** The keys the example lists, in its order. */
function secretKeys() {
  return fs
    .readFileSync(EXAMPLE, 'utf8')
    .split('\n')
    .flatMap((l) => /^([A-Z][A-Z0-9_]*)=/.exec(l)?.[1] ?? []);
}

/**
 * A value for `key`: URL-safe (embedded in DATABASE_URL / REDIS_URL), 32 random bytes as 64 hex digits.
 * @param {string} key
 */
function generate(key) {
  if (key === 'SKALD_VAPID_PRIVATE_KEY') return vapidPrivateKey();
  return key === 'SKALD_ADMIN_PASSWORD'
    ? crypto.randomBytes(16).toString('hex')
    : crypto.randomBytes(32).toString('hex');
}

/** A VAPID private key: base64url of a P-256 private scalar (32 bytes; its JWK `d`). */
function vapidPrivateKey() {
  const { privateKey } = crypto.generateKeyPairSync('ec', { namedCurve: 'P-256' });
  return /** @type {string} */ (privateKey.export({ format: 'jwk' }).d);
}

/** The Secret's data: every listed key generated, operator-provided ones from `env`. */
function secretData(env = process.env) {
  /** @type {Record<string, string>} */
  const data = {};
  for (const key of secretKeys()) {
    if (PROVIDED.includes(key)) {
      if (env[key]) data[key] = env[key];
    } else data[key] = generate(key);
  }
  for (const key of PROVIDED) if (!(key in data) && env[key]) data[key] = env[key];
  return data;
}

/**
 * @param {string[]} argv
 */
function main(argv) {
  const at = argv.indexOf('--namespace');
  const namespace = at >= 0 ? argv[at + 1] : 'skald';
  if (!namespace || !/^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$/.test(namespace)) {
    console.error('--namespace needs a Kubernetes namespace name');
    process.exit(2);
  }
  const data = secretData();
  if (argv.includes('--env')) {
    for (const [k, v] of Object.entries(data)) process.stdout.write(`${k}=${v}\n`);
    return;
  }
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: { name: 'skald-secrets', namespace, labels: { 'app.kubernetes.io/part-of': 'skald' } },
    type: 'Opaque',
    stringData: data,
  };
  // JSON is YAML: kubectl reads either.
  process.stdout.write(`${JSON.stringify(secret, null, 2)}\n`);
}

if (require.main === module) main(process.argv.slice(2));

module.exports = { PROVIDED, secretData, secretKeys };
