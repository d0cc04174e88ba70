import { z } from 'zod';
import { boolArg, defineTool, EVERYWHERE, toolPath } from './define-tool';

export const editFile = defineTool({
  name: 'edit_file',
  description: 'Replace text in a file. `old` must occur exactly once unless replace_all is set.',
  args: z.object({
    path: toolPath('File to edit'),
    old: z.string().describe('Exact text to replace'),
    new: z.string().describe('Replacement text'),
    replace_all: boolArg.default(false).describe('Replace every occurrence'),
  }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
