import { z } from 'zod';
import { defineTool, EVERYWHERE } from './define-tool';

export const memorySearch = defineTool({
  name: 'memory_search',
  description:
    "Search the user's memory documents (user-memory/…) and the shared ones (shared-memory/…) for a text; returns the best matching passages with their paths.",
  args: z.object({ query: z.string().min(1).max(4000).describe('What to look for') }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
