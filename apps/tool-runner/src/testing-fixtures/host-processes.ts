import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

/**
 * Processes in the host's own pid namespace (the runner's side of every sandbox: launchers, bwrap)
 * whose argv, environment or working directory contains `token`.
 */
export function hostProcessesWith(token: string): string[] {
  const hostNs = readlinkSync('/proc/self/ns/pid');
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    try {
      if (readlinkSync(`/proc/${pid}/ns/pid`) !== hostNs || pid === String(process.pid)) continue;
      const cmdline = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      const environ = readFileSync(`/proc/${pid}/environ`, 'latin1');
      const cwd = readlinkSync(`/proc/${pid}/cwd`);
      if ([cmdline, environ, cwd].some((x) => x.includes(token)))
        found.push(`${pid}: ${cmdline.replaceAll('\0', ' ')}`);
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}

/** Every process on the machine (any pid namespace, sandboxes included) whose argv contains `token`. */
export function processesWith(token: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((p) => /^\d+$/.test(p))) {
    if (pid === String(process.pid)) continue;
    try {
      const argv = readFileSync(`/proc/${pid}/cmdline`, 'latin1');
      if (argv.includes(token)) found.push(`${pid}: ${argv.replaceAll('\0', ' ')}`);
    } catch {
      /* gone meanwhile */
    }
  }
  return found;
}
