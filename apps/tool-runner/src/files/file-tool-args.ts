import { z } from 'zod';
import { describeZodError } from '@skald/contracts';
import { ToolError } from '../tool-error';
import { GLOB_MAX_CHARS } from '../patterns/glob';

/** Models sometimes send numbers and booleans as strings; accept the obvious spellings. */
const int = (min: number, max: number) =>
  z.preprocess(
    (v) => (typeof v === 'string' && /^\s*-?\d+\s*$/.test(v) ? Number(v) : v),
    z.number().int().min(min).max(max),
  );
const bool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
const path = z.string();
const text = z.string();

export const ListFilesArgs = z.object({
  path: path.default('.'),
  depth: int(1, 20).default(3),
  dirs_only: bool.default(false),
  detailed: bool.default(false),
});
export const ReadFileArgs = z.object({
  path,
  start_line: int(1, Number.MAX_SAFE_INTEGER).optional(),
  end_line: int(1, Number.MAX_SAFE_INTEGER).optional(),
  limit: int(1, 100_000).optional(),
});
export const WriteFileArgs = z.object({ path, content: text });
export const EditFileArgs = z.object({ path, old: text, new: text, replace_all: bool.default(false) });
export const InsertAtLineArgs = z.object({
  path,
  line: int(0, Number.MAX_SAFE_INTEGER),
  content: text,
  position: z.enum(['before', 'after']).default('after'),
});
export const ReplaceLinesArgs = z.object({
  path,
  from_line: int(1, Number.MAX_SAFE_INTEGER),
  to_line: int(1, Number.MAX_SAFE_INTEGER),
  new: text,
});
export const AppendFileArgs = z.object({ path, content: text });
export const SearchFileArgs = z.object({ path, query: z.string().min(1), context_lines: int(0, 10).default(0) });
/** Longest grep_files pattern accepted (RE2's matching cost grows with the pattern's size). */
export const PATTERN_MAX_CHARS = 4096;
export const GrepFilesArgs = z.object({
  path: path.default('.'),
  pattern: z.string().min(1).max(PATTERN_MAX_CHARS),
  case_sensitive: bool.default(false),
  glob: z.string().min(1).max(GLOB_MAX_CHARS).optional(),
  output_mode: z.enum(['content', 'files_only', 'count']).default('content'),
  context_lines: int(0, 10).default(0),
  limit: int(1, 1000).default(100),
  offset: int(0, Number.MAX_SAFE_INTEGER).default(0),
});
export const ExecuteCmdArgs = z.object({
  command: z.string().min(1),
  workdir: z.string().optional(),
  timeout: int(1, 600).default(120),
});

/** The session's working directory, injected into the arguments by the session worker. */
export const WorkdirArg = z.object({ workdir: z.string().optional() });

/** Parses a tool's arguments; the error names the tool and the argument. */
export function parseArgs<S extends z.ZodType>(tool: string, schema: S, args: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  throw new ToolError('invalid_argument', `${tool}: invalid arguments: ${describeZodError(parsed.error).message}`);
}
