import { z } from 'zod';
import { boolArg, defineTool, EVERYWHERE, intArg, toolPathOrBase } from './define-tool';

export const listFiles = defineTool({
  name: 'list_files',
  description: 'List files and directories under a path of the workspace.',
  args: z.object({
    path: toolPathOrBase('Directory (default: the working directory)'),
    depth: intArg(1, 20).default(3).describe('How deep to recurse (default 3)'),
    dirs_only: boolArg.default(false).describe('Directories only'),
    detailed: boolArg.default(false).describe('Include sizes and modification times'),
  }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
