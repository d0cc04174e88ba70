// Lints in-memory sources with the repository's real eslint.config.mjs, outside Jest's VM (ESLint loads its
// flat config with a dynamic import(), which Jest's CommonJS runtime cannot do without
// --experimental-vm-modules).
//
// The probe files do not exist on disk, so TypeScript's project service cannot own them: type-aware rules are
// switched off for them (typescript-eslint's own disableTypeChecked preset); every other rule of the real config,
// the module boundaries among them, applies unchanged.
//
// stdin:  [{ "id": string, "filePath": string (relative to the repo root), "code": string }]
// stdout: a line `@@lint-results@@` followed by { [id]: LintMessage[] } (plugins may print before it)
import { execFileSync } from 'node:child_process';
import { ESLint } from 'eslint';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import tseslint from 'typescript-eslint';

const repoRoot = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

async function readStdin() {
  const chunks = [];
  for await (const chunk of process.stdin) chunks.push(chunk);
  return Buffer.concat(chunks).toString('utf8');
}

// @nx/enforce-module-boundaries reads Nx's cached project graph and silently skips itself without
// one (a fresh clone has none): compute it first.
execFileSync(process.execPath, [join(repoRoot, 'node_modules/nx/bin/nx.js'), 'show', 'projects'], {
  cwd: repoRoot,
  stdio: 'ignore',
  env: { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true' },
});
const probes = JSON.parse(await readStdin());
const eslint = new ESLint({ cwd: repoRoot, overrideConfig: [tseslint.configs.disableTypeChecked] });
const out = {};
for (const { id, filePath, code } of probes) {
  const [result] = await eslint.lintText(code, { filePath: join(repoRoot, filePath) });
  out[id] = result ? result.messages : [];
}
process.stdout.write(`\n@@lint-results@@\n${JSON.stringify(out)}`);
