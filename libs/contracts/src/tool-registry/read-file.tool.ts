import { z } from 'zod';
import { defineTool, EVERYWHERE, intArg, toolPath } from './define-tool';

export const readFile = defineTool({
  name: 'read_file',
  description:
    'Read a text file, with line numbers. An image (PNG, JPEG, WebP, GIF) is shown to a model that can see images. A PDF, Word (.docx), Excel (.xlsx), CSV, PowerPoint (.pptx) or HTML file is read as its extracted text, with page, sheet or slide markers.',
  args: z.object({
    path: toolPath('File to read'),
    start_line: intArg(1, Number.MAX_SAFE_INTEGER).optional().describe('First line (1-based)'),
    end_line: intArg(1, Number.MAX_SAFE_INTEGER).optional().describe('Last line (inclusive)'),
    limit: intArg(1, 100_000).optional().describe('Maximum number of lines'),
  }),
  category: 'filesystem',
  access: 'read',
  restartHint: 'reExecute',
  offeredAt: EVERYWHERE,
  defaultRule: 'allow',
});
