import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg } from './define-tool';

export const executeCmd = defineTool({
  name: 'execute_cmd',
  description: 'Run a shell command (sh -c) in the sandbox, in the working directory.',
  args: z.object({
    command: z.string().min(1).describe('The command line'),
    workdir: z.string().optional().describe('Directory inside /workspace'),
    timeout: intArg(1, 600).default(120).describe('Seconds, 1–600 (default 120)'),
  }),
  category: 'shell',
  access: 'write',
  restartHint: 'markInterrupted',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
