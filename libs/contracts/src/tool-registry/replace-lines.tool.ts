import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg, toolPath } from './define-tool';

export const replaceLines = defineTool({
  name: 'replace_lines',
  description: 'Replace a range of lines (1-based, inclusive).',
  args: z.object({
    path: toolPath('File'),
    from_line: intArg(1, Number.MAX_SAFE_INTEGER).describe('First line'),
    to_line: intArg(1, Number.MAX_SAFE_INTEGER).describe('Last line (inclusive)'),
    new: z.string().describe('Replacement text'),
  }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'markInterrupted',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
