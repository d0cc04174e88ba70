import { z } from 'zod';
import { defineTool, EVERYWHERE, toolPath } from './define-tool';

export const appendFile = defineTool({
  name: 'append_file',
  description: 'Append content to the end of a file.',
  args: z.object({ path: toolPath('File'), content: z.string().describe('Text to append') }),
  category: 'filesystem',
  access: 'write',
  restartHint: 'markInterrupted',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
