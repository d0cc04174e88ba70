import { z } from 'zod';
import { defineTool, EVERYWHERE, toolPath } from './define-tool';

/** The `open_file` event (PROTOCOL) — the user's file viewer opens the file. */
export const openFile = defineTool({
  name: 'open_file',
  description:
    "Show a workspace file to the user: it opens in the user's file viewer, highlighted. Use it to point the user at a file you wrote or found; it does not return the file's content (read_file does).",
  args: z.object({
    path: toolPath('File to show'),
  }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
