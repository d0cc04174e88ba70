import { z } from 'zod';
import { boolArg, defineTool, EVERYWHERE, intArg, toolPathOrBase } from './define-tool';

/**
 * The regular-expression dialect of grep_files (RE2: linear-time matching), as the model is told it
 * in the tool's description and in the error for a pattern outside it.
 */
export const RE2_SYNTAX_NOTE =
  'Patterns use RE2 syntax (as in Go and ripgrep): no backreferences (\\1) and no lookaround ((?=…), (?!…), (?<=…), (?<!…)).';

/** Longest grep_files pattern accepted (RE2's matching cost grows with the pattern's size). */
export const PATTERN_MAX_CHARS = 4096;
/** Longest glob accepted (the expression's size, and so the matching cost per path, follows from it). */
export const GLOB_MAX_CHARS = 512;

export const grepFiles = defineTool({
  name: 'grep_files',
  description: `Search files under a path for a regular expression. ${RE2_SYNTAX_NOTE}`,
  args: z.object({
    path: toolPathOrBase('Directory or file'),
    pattern: z.string().min(1).max(PATTERN_MAX_CHARS).describe('Regular expression (RE2 syntax)'),
    case_sensitive: boolArg.default(true).describe('Case sensitive (default true)'),
    glob: z
      .string()
      .min(1)
      .max(GLOB_MAX_CHARS)
      .optional()
      .describe('Only files matching this glob: * ? [abc] [!abc] {a,b} within a name, ** across directories'),
    output_mode: z.enum(['content', 'files_only', 'count']).default('content'),
    context_lines: intArg(0, 10).default(0).describe('0–10'),
    limit: intArg(1, 1000).default(100).describe('Maximum results (default 100)'),
    offset: intArg(0, Number.MAX_SAFE_INTEGER).default(0).describe('Skip this many results'),
  }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
