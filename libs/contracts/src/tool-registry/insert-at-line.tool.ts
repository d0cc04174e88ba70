import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg, toolPath } from './define-tool';

export const insertAtLine = defineTool({
  name: 'insert_at_line',
  description: 'Insert content before or after a line (1-based).',
  args: z.object({
    path: toolPath('File'),
    line: intArg(0, Number.MAX_SAFE_INTEGER).describe('Line number (1-based)'),
    content: z.string().describe('Text to insert'),
    position: z.enum(['before', 'after']).default('after').describe('Default after'),
  }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'markInterrupted',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
