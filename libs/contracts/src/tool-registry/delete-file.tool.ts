import { z } from 'zod';
import { boolArg, defineTool, EVERYWHERE, toolPath } from './define-tool';

export const deleteFile = defineTool({
  name: 'delete_file',
  description:
    'Delete a file, a symlink (never what it points to) or an empty directory; with recursive, a directory and ' +
    'everything in it. Works when the workspace is over its quota: use it to make room.',
  args: z.object({
    path: toolPath('File, symlink or directory to delete'),
    recursive: boolArg.default(false).describe('Delete a directory with everything in it (default false)'),
  }),
  category: 'filesystem',
  access: 'write',
  // A re-run after a crash could delete a file created at that path since (at most once, I2).
  restartHint: 'markInterrupted',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
  pathNamesEntry: true,
});
