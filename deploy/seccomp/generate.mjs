#!/usr/bin/env node
// The tool runner's container seccomp profile, derived from Docker's default profile:
//   node deploy/seccomp/generate.mjs > deploy/seccomp/tool-runner.json
// docker-default.json is moby/profiles seccomp/default.json (Apache-2.0) at commit
// cd3bed8061c7b7378b61fc6827c7885779417a75, unchanged. The result is that profile plus exactly what
// bubblewrap needs to build a sandbox without any capability: clone/clone3 with namespace flags,
// unshare, mount, umount2 and pivot_root (Docker allows them only with CAP_SYS_ADMIN, and never
// pivot_root). Everything else Docker denies stays denied for the runner itself; inside each sandbox
// the runner's own, stricter filter (apps/tool-runner/seccomp) denies these again. A test regenerates
// the profile and compares it with the checked-in file.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const upstream = JSON.parse(readFileSync(join(here, 'docker-default.json'), 'utf8'));
const BWRAP = ['clone', 'clone3', 'mount', 'pivot_root', 'umount2', 'unshare'];

/** Upstream's rules for these calls are conditional (a flag mask, CAP_SYS_ADMIN, ENOSYS for clone3): replaced. */
const syscalls = upstream.syscalls.flatMap((rule) => {
  const names = rule.names.filter((n) => !BWRAP.includes(n));
  return names.length === 0 ? [] : [{ ...rule, names }];
});
syscalls.push({
  names: BWRAP,
  action: 'SCMP_ACT_ALLOW',
  comment:
    'bubblewrap creates an unprivileged user namespace, then mount, PID, network, IPC and UTS namespaces, ' +
    'for every command and stdio MCP server; the sandbox itself runs under the stricter apps/tool-runner/seccomp filter',
});
process.stdout.write(`${JSON.stringify({ ...upstream, syscalls }, null, 2)}\n`);
