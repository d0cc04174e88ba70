import { readFileSync } from 'node:fs';
import os from 'node:os';

/**
 * The operating system shown in the dynamic tail (type + version, spec 000 "Context Building" 5):
 * the distribution's name on Linux (`Debian GNU/Linux 12 (bookworm) [x64]`), else the OS type and
 * release (`Darwin 24.5.0 [arm64]`). Computed once.
 */
export function osInfo(osRelease = '/etc/os-release'): string {
  let name: string | null = null;
  if (process.platform === 'linux') {
    try {
      const m = /^PRETTY_NAME="?([^"\n]+)"?$/m.exec(readFileSync(osRelease, 'utf8'));
      name = m ? m[1] : null;
    } catch {
      name = null;
    }
  }
  return `${name ?? `${os.type()} ${os.release()}`} [${process.arch}]`;
}
