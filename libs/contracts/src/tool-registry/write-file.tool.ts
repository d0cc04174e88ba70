import { z } from 'zod';
import { defineTool, EVERYWHERE, toolPath } from './define-tool';

export const writeFile = defineTool({
  name: 'write_file',
  description: 'Create or overwrite a file with the given content.',
  args: z.object({ path: toolPath('File to write'), content: z.string().describe('The whole new content') }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
