import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg, toolPath } from './define-tool';

export const searchFile = defineTool({
  name: 'search_file',
  description: 'Search one file for a text, with context lines.',
  args: z.object({
    path: toolPath('File'),
    query: z.string().min(1).describe('Text to find'),
    context_lines: intArg(0, 10).default(0).describe('Lines of context'),
  }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
