import { lstat, readdir } from 'node:fs/promises';
import { join } from 'node:path';

/**
 * Bytes used by a directory tree: the apparent size of its regular files (symlinks are not
 * followed, so a link to a big file elsewhere costs nothing). Entries that vanish meanwhile count 0.
 */
export async function diskUsage(root: string): Promise<number> {
  let total = 0;
  const stack = [root];
  while (stack.length > 0) {
    const dir = stack.pop() as string;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const entry of entries) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) stack.push(path);
      else if (entry.isFile())
        total += await lstat(path).then(
          (s) => s.size,
          () => 0,
        );
    }
  }
  return total;
}
