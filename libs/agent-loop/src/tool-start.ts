import { argumentsTooLarge, projectedArguments } from './call-checks';
import { parseArguments, stringArg } from './json';
import { preview } from './texts';
import type { FrameContext } from './turn-context';
import type { SessionEventDraft, ToolCallRow } from './types';

/** `tool_start` carries the model's own arguments (before working-directory injection). */
export function toolStartEvent(fctx: FrameContext, row: ToolCallRow): SessionEventDraft {
  const args = argumentsTooLarge(row.argumentsText)
    ? (JSON.parse(projectedArguments(row.argumentsText)) as unknown)
    : parseArguments(row.argumentsText);
  const label = fctx.turn.deps.tools.label?.(row.name, args);
  const path = label?.path ?? stringArg(args, 'path');
  return {
    type: 'tool_start',
    tool_call_id: row.id,
    message_id: row.messageId,
    name: row.name,
    arguments: args,
    label_short: label?.short ?? row.name,
    label_full: label?.full ?? `${row.name} ${preview(row.argumentsText, 120)}`,
    ...(path ? { path } : {}),
  };
}
