import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg } from './define-tool';

export const webSearch = defineTool({
  name: 'web_search',
  description:
    "Search the web with the deployment's search backend; returns numbered results with title, URL and snippet. " +
    'Read a result with web_fetch.',
  args: z.object({
    query: z.string().min(1).max(400).describe('What to search for'),
    count: intArg(1, 20).default(8).describe('How many results, 1–20 (default 8)'),
  }),
  category: 'web',
  // The query leaves the deployment for the search backend.
  access: 'write',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
