import { z } from 'zod';
import { WEB_URL_MAX_CHARS } from '../web-sources';
import { defineTool, EVERYWHERE, intArg } from './define-tool';

export const webFetch = defineTool({
  name: 'web_fetch',
  description:
    'Fetch a web page (http or https) and return its readable text as Markdown (HTML: the main content; PDF: its text). ' +
    'Plain text, JSON, XML and CSV are returned as they are; other types are refused. The result names the final URL ' +
    'and whether it was truncated. A redirect to another host is not followed: call web_fetch again with the URL it names.',
  args: z.object({
    url: z.string().min(1).max(WEB_URL_MAX_CHARS).describe('The http(s) URL to fetch'),
    max_chars: intArg(1_000, 100_000).optional().describe('Longest text to return, 1000–100000 characters'),
  }),
  category: 'web',
  // A request to a server the model chose carries what the model put in its URL out of the
  // deployment, and a GET may change the world: judged and ordered like a write.
  access: 'write',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'require',
});
