import { z } from 'zod';
import { builtinTool, describeZodError } from '@skald/contracts';
import { ToolError } from '../tool-error';

/** Each tool's arguments, as the registry defines them (the schema the model sees is generated from the same). */
export const ListFilesArgs = builtinTool('list_files').args;
export const ReadFileArgs = builtinTool('read_file').args;
export const OpenFileArgs = builtinTool('open_file').args;
export const WriteFileArgs = builtinTool('write_file').args;
export const EditFileArgs = builtinTool('edit_file').args;
export const InsertAtLineArgs = builtinTool('insert_at_line').args;
export const ReplaceLinesArgs = builtinTool('replace_lines').args;
export const AppendFileArgs = builtinTool('append_file').args;
export const DeleteFileArgs = builtinTool('delete_file').args;
export const SearchFileArgs = builtinTool('search_file').args;
export const GrepFilesArgs = builtinTool('grep_files').args;
export const ExecuteCmdArgs = builtinTool('execute_cmd').args;

/** Parses a tool's arguments; the error names the tool and the argument. */
export function parseArgs<S extends z.ZodType>(tool: string, schema: S, args: Record<string, unknown>): z.output<S> {
  const parsed = schema.safeParse(args);
  if (parsed.success) return parsed.data;
  throw new ToolError('invalid_argument', `${tool}: invalid arguments: ${describeZodError(parsed.error).message}`);
}
