/**
 * The one projection of stored history into OpenAI chat-completions messages (spec 000
 * "Context Building"): static system → scratchpad → compaction summary → history → dynamic
 * tail → tail reminder. Pure: everything it needs is handed in.
 */
import { projectedArguments, projectedToolName } from './call-checks';
import { formatZonedDateTime } from './datetime';
import { isImageAttachment } from './images';
import {
  cutToolResult,
  hiddenToolImage,
  hiddenToolResult,
  imageOverBudget,
  INTERRUPTED_AFTER_START,
  INTERRUPTED_BEFORE_START,
} from './texts';
import { CHARS_PER_TOKEN, estimateTokens, IMAGE_TOKENS } from './tokens';
import type {
  Attachment,
  MessageRow,
  ScratchpadNote,
  ToolCallRow,
  WireImageRef,
  WireMessage,
  WireUserPart,
} from './types';

export interface ProjectionInput {
  /** The agent's static prompt (may contain `__KEY__` sentinels). */
  systemPrompt: string;
  substitutions: Record<string, string>;
  /** Wrap the static prompt in a `cache_control: ephemeral` block. */
  cacheControl: boolean;
  scratchpad: ScratchpadNote[];
  compactionSummary: string | null;
  /** Non-failed rows of the frame (after the compaction boundary), in order. */
  messages: MessageRow[];
  /** Tool calls of the frame, in order. */
  toolCalls: ToolCallRow[];
  /** Keep only the last N rows (compaction off); null = keep all. */
  maxHistoryMessages: number | null;
  maxToolResultChars: number | null;
  dynamicTail: string | null;
  tailReminder: string | null;
  /** Cut the largest tool results (with a notice) until the messages fit; null = no limit. */
  contextBudgetTokens?: number | null;
  /**
   * The workspace image a stored tool result shows (`ImagePort.resultImage`); absent: none. Image
   * attachments and these become `image_ref` parts (see `images.ts`).
   */
  resultImage?: (call: ToolCallRow) => string | null;
}

/** The context in the spec's order, part by part (what `/context` reports). */
export interface ContextParts {
  /** AGENT.md + inject_memory files + MCP list, substitutions applied (cacheable). */
  system: WireMessage;
  scratchpad: WireMessage | null;
  summary: WireMessage | null;
  history: WireMessage[];
  dynamicTail: WireMessage | null;
  tailReminder: WireMessage | null;
}

/** A tool result is never cut below this many characters. */
export const MIN_CUT_RESULT_CHARS = 500;

export function applySubstitutions(text: string, substitutions: Record<string, string>): string {
  let out = text;
  for (const [key, value] of Object.entries(substitutions)) out = out.split(`__${key}__`).join(value);
  return out;
}

/** XML character data: no note's text can close or open an element. */
function escapeText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

/** The scratchpad system message; keys and values are XML-escaped, so any text reads back as it was. */
export function scratchpadMessage(notes: ScratchpadNote[]): string {
  const lines = notes.map(
    (n) => `  <note key="${escapeText(n.key).replace(/"/g, '&quot;')}">${escapeText(n.value)}</note>`,
  );
  return ['<scratchpad>', ...lines, '</scratchpad>'].join('\n');
}

export const COMPACTION_SUMMARY_HEADER = 'Summary of the earlier conversation (older messages were compacted):';

/**
 * Attachments whose text the tool runner extracts (`@skald/documents`' table, which a test holds this
 * list to): the block tells the model that `read_file` gives their text.
 */
export const TEXT_RENDITION_EXTENSIONS: readonly string[] = [
  '.csv',
  '.docx',
  '.htm',
  '.html',
  '.pdf',
  '.pptx',
  '.xlsx',
];

function hasTextRendition(path: string): boolean {
  const dot = path.lastIndexOf('.');
  return dot > path.lastIndexOf('/') && TEXT_RENDITION_EXTENSIONS.includes(path.slice(dot).toLowerCase());
}

/** The `[SYSTEM INFO]` block for attachments, added on the fly (never stored). */
export function attachmentsBlock(attachments: Attachment[]): string {
  const lines = attachments.map(
    (a) =>
      `- ${a.path}${hasTextRendition(a.path) ? ' (a document: read_file on this path gives its extracted text, with page, sheet or slide markers)' : ''}`,
  );
  return `[SYSTEM INFO] The user attached ${attachments.length === 1 ? 'a file' : 'files'}:\n${lines.join('\n')}`;
}

/** The model-visible tool result for a stored call (ARCHITECTURE.md "Who checks what"). */
export function toolResultContent(call: ToolCallRow): string {
  switch (call.status) {
    case 'done':
      return call.result ?? '';
    case 'failed':
      return `Error: ${call.result ?? 'unknown error'}`;
    case 'cancelled':
    case 'rejected':
      return call.result ?? '';
    case 'pending':
    case 'awaiting_human':
      return INTERRUPTED_BEFORE_START;
    case 'running':
      return INTERRUPTED_AFTER_START;
    case 'interrupted':
      return call.result === null ? INTERRUPTED_AFTER_START : `Error: ${call.result}`;
  }
}

function userContent(row: MessageRow): string {
  if (row.attachments && row.attachments.length > 0) {
    return `${row.content}\n\n${attachmentsBlock(row.attachments)}`;
  }
  return row.content;
}

/** The image attachments of a row, as references (the attachment block names them already). */
function attachmentImages(row: MessageRow): WireImageRef[] {
  return (row.attachments ?? []).filter(isImageAttachment).map((a) => ({ type: 'image_ref', path: a.path }));
}

/** What an image counts as, in characters of the loop's measure. */
const IMAGE_CHARS = IMAGE_TOKENS * CHARS_PER_TOKEN;

export function projectMessages(input: ProjectionInput): WireMessage[] {
  return flattenContext(projectContext(input));
}

export function flattenContext(parts: ContextParts): WireMessage[] {
  const out: WireMessage[] = [parts.system];
  if (parts.scratchpad) out.push(parts.scratchpad);
  if (parts.summary) out.push(parts.summary);
  out.push(...parts.history);
  if (parts.dynamicTail) out.push(parts.dynamicTail);
  if (parts.tailReminder) out.push(parts.tailReminder);
  return out;
}

export function projectContext(input: ProjectionInput): ContextParts {
  const staticText = applySubstitutions(input.systemPrompt, input.substitutions);
  const history: WireMessage[] = [];
  /** Tool name of each `tool` message in `history`, by index (for the budget notice). */
  const toolNames = new Map<number, string>();

  let rows = input.messages.filter((m) => m.status === 'ok');
  if (input.maxHistoryMessages !== null && rows.length > input.maxHistoryMessages) {
    rows = rows.slice(rows.length - input.maxHistoryMessages);
  }
  const callsByMessage = new Map<string, ToolCallRow[]>();
  for (const call of input.toolCalls) {
    const list = callsByMessage.get(call.messageId) ?? [];
    list.push(call);
    callsByMessage.set(call.messageId, list);
  }
  for (const list of callsByMessage.values()) list.sort((a, b) => a.index - b.index);

  let currentTurnStart = -1;
  rows.forEach((row, i) => {
    if (row.role !== 'assistant') currentTurnStart = i;
  });

  let pendingUser: string[] = [];
  let pendingImages: WireImageRef[] = [];
  const flushUser = (): void => {
    if (pendingUser.length > 0) {
      const text = pendingUser.join('\n\n');
      history.push({
        role: 'user',
        content: pendingImages.length > 0 ? [{ type: 'text', text }, ...pendingImages] : text,
      });
    }
    pendingUser = [];
    pendingImages = [];
  };
  rows.forEach((row, i) => {
    if (row.role !== 'assistant') {
      pendingUser.push(userContent(row));
      pendingImages.push(...attachmentImages(row));
      return;
    }
    flushUser();
    const calls = callsByMessage.get(row.id) ?? [];
    if (calls.length === 0) {
      history.push({ role: 'assistant', content: row.content });
      return;
    }
    history.push({
      role: 'assistant',
      content: row.content === '' ? null : row.content,
      tool_calls: calls.map((c) => ({
        id: c.llmCallId,
        type: 'function',
        function: { name: projectedToolName(c.name), arguments: projectedArguments(c.argumentsText) },
      })),
    });
    const previousTurn = i < currentTurnStart;
    const images: WireImageRef[] = [];
    for (const call of calls) {
      let content = toolResultContent(call);
      const limit = input.maxToolResultChars;
      if (previousTurn && limit !== null && content.length > limit) {
        content = hiddenToolResult(call.name, content.length, limit);
      }
      const image = call.status === 'done' ? (input.resultImage?.(call) ?? null) : null;
      if (image !== null) {
        // An earlier turn's image is hidden like a tool result longer than the limit.
        if (previousTurn && limit !== null && IMAGE_CHARS > limit)
          content += `\n${hiddenToolImage(call.name, IMAGE_CHARS, limit)}`;
        else images.push({ type: 'image_ref', path: image, label: `The image ${image} (${call.name}):` });
      }
      toolNames.set(history.length, call.name);
      history.push({ role: 'tool', tool_call_id: call.llmCallId, content });
    }
    // Tool messages carry text only: their images follow in a user message of image parts alone.
    if (images.length > 0) history.push({ role: 'user', content: images });
  });
  flushUser();

  const parts: ContextParts = {
    system: {
      role: 'system',
      content: input.cacheControl
        ? [{ type: 'text', text: staticText, cache_control: { type: 'ephemeral' } }]
        : staticText,
    },
    scratchpad: input.scratchpad.length > 0 ? { role: 'system', content: scratchpadMessage(input.scratchpad) } : null,
    summary: input.compactionSummary
      ? { role: 'system', content: `${COMPACTION_SUMMARY_HEADER}\n${input.compactionSummary}` }
      : null,
    history,
    dynamicTail: input.dynamicTail ? { role: 'system', content: input.dynamicTail } : null,
    tailReminder: input.tailReminder ? { role: 'system', content: input.tailReminder } : null,
  };
  if (input.contextBudgetTokens != null) fitBudget(parts, input.contextBudgetTokens, toolNames);
  return parts;
}

/**
 * Makes the messages fit the budget: first older images leave (oldest first, each replaced by a
 * marker), then the largest tool results are cut, each with a notice (a result keeps at least
 * `MIN_CUT_RESULT_CHARS`), then the images of the latest message that has any. Nothing else is
 * touched: if the rest alone is too big, that is compaction's job.
 */
function fitBudget(parts: ContextParts, budgetTokens: number, toolNames: Map<number, string>): void {
  const overBy = (): number => (estimateTokens(flattenContext(parts)) - budgetTokens) * CHARS_PER_TOKEN;
  if (overBy() <= 0) return;
  const withImages = parts.history
    .map((m, i) => (m.role === 'user' && typeof m.content !== 'string' && m.content.some(isImageRef) ? i : -1))
    .filter((i) => i >= 0);
  const latest = withImages.pop();
  dropImages(parts, withImages, budgetTokens, overBy);
  cutToolResults(parts, budgetTokens, toolNames, overBy());
  if (latest !== undefined) dropImages(parts, [latest], budgetTokens, overBy);
}

function isImageRef(p: WireUserPart): p is WireImageRef {
  return p.type === 'image_ref';
}

/** Replaces the image references of `indexes` (in order) by a marker while the messages are over budget. */
function dropImages(parts: ContextParts, indexes: number[], budgetTokens: number, overBy: () => number): void {
  for (const i of indexes) {
    const message = parts.history[i] as Extract<WireMessage, { role: 'user' }>;
    const content = [...(message.content as WireUserPart[])];
    for (let k = 0; k < content.length; k++) {
      if (overBy() <= 0) return;
      const part = content[k];
      if (!isImageRef(part)) continue;
      content[k] = { type: 'text', text: imageOverBudget(part.path, budgetTokens) };
      parts.history[i] = { ...message, content: [...content] };
    }
  }
}

function cutToolResults(
  parts: ContextParts,
  budgetTokens: number,
  toolNames: Map<number, string>,
  overAtStart: number,
): void {
  let over = overAtStart;
  if (over <= 0) return;
  const tools = [...toolNames.keys()].sort(
    (a, b) => (parts.history[b].content as string).length - (parts.history[a].content as string).length,
  );
  for (const i of tools) {
    if (over <= 0) return;
    const message = parts.history[i] as Extract<WireMessage, { role: 'tool' }>;
    const length = message.content.length;
    const name = toolNames.get(i) as string;
    const noticeChars = cutToolResult(name, length, length, budgetTokens).length + 1;
    const keep = Math.max(MIN_CUT_RESULT_CHARS, length - over - noticeChars);
    if (keep + noticeChars >= length) continue;
    const content = `${message.content.slice(0, keep)}\n${cutToolResult(name, length, keep, budgetTokens)}`;
    over -= length - content.length;
    parts.history[i] = { ...message, content };
  }
}

export interface DynamicTailInput {
  memoryContext: string | null;
  extraPrompts: string[];
  now: Date;
  timeZone: string;
  os: string;
  workingDirectory: string | null;
}

/** The per-turn system message placed after the history (never part of the cached prefix). */
export function dynamicTail(input: DynamicTailInput): string {
  const parts: string[] = [];
  if (input.memoryContext) parts.push(input.memoryContext);
  for (const p of input.extraPrompts) if (p.trim() !== '') parts.push(p);
  const env = [
    `Current date and time: ${formatZonedDateTime(input.now, input.timeZone)}`,
    `Operating system: ${input.os}`,
  ];
  if (input.workingDirectory) {
    env.push(
      `Working directory: ${input.workingDirectory} (filesystem tools and execute_cmd resolve relative paths against it; no need to cd)`,
    );
  }
  parts.push(env.join('\n'));
  return parts.join('\n\n');
}
