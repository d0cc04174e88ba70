import { anyCharsGlob, type GlobTest } from '@skald/contracts';
import { RE2JS } from 're2js';

/**
 * The globs of approval rules, matched in time linear in the value: an admin writes the glob, the
 * model supplies the value (a tool name, a command word of up to a whole command line, a path), so
 * no glob may backtrack. A JS RegExp built from `a*a*a*…b` takes time polynomial in the value.
 * `anyCharsGlob` (`*` any characters) is the tool patterns' glob, from libs/contracts.
 */
export { anyCharsGlob, type GlobTest };

/** Longest path a path rule is matched against; a longer one is no valid path (PATH_MAX). */
export const RULE_PATH_MAX_CHARS = 4096;

/**
 * Paths: `*` any characters within a segment, `**` any characters across segments. Without `**`
 * the path is matched segment by segment (same count, each segment an anyCharsGlob); with it the
 * glob runs as an RE2 expression (re2js: linear in the path's length).
 */
export function pathGlob(pattern: string): GlobTest {
  if (!pattern.includes('**')) {
    const segments = pattern.split('/').map(anyCharsGlob);
    return {
      test(v) {
        const parts = v.split('/', segments.length + 1);
        return parts.length === segments.length && segments.every((s, i) => s.test(parts[i]));
      },
    };
  }
  const body = pattern
    .split(/(\*\*|\*)/)
    .map((part) => (part === '**' ? '.*' : part === '*' ? '[^/]*' : RE2JS.quote(part)))
    .join('');
  const re = RE2JS.compile(`^${body}$`, RE2JS.DOTALL);
  return { test: (v) => re.test(v) };
}
