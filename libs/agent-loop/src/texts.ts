/** Every sentence the model or the user sees that the loop writes itself. */

export const CANCELLED_NOTE = 'Cancelled by user.';

export const INTERRUPTED_BEFORE_START =
  'Error: tool call was interrupted (connection lost before user approval). Please retry the operation.';

/** What is stored (and announced in `tool_error`) for a call a restart interrupted after it started. */
export const INTERRUPTED_AFTER_START_NOTE =
  'tool call was interrupted by a restart after it started; it may or may not have taken effect. Check the current state before retrying.';

/** What the model reads for it (ARCHITECTURE.md: an `interrupted` call is an error). */
export const INTERRUPTED_AFTER_START = `Error: ${INTERRUPTED_AFTER_START_NOTE}`;

/** The one place the rejection sentence is built (spec: ApprovalDecision::rejection_message). */
export function rejectionMessage(note?: string | null): string {
  const trimmed = (note ?? '').trim();
  return trimmed ? `User rejected this tool call. Reason: ${trimmed}` : 'User rejected this tool call.';
}

/**
 * The first lines of the result of a call a human edited before approving it: that it was edited,
 * and how (a unified diff of each changed argument, original → edited).
 */
export function editedCallNote(diff: string): string {
  return `A human edited this tool call before approving it; it ran with the edited arguments:\n${diff}`;
}

export const AUTO_DENY_REASON = rejectionMessage(
  'this tool call needs approval and this session runs unattended (auto-deny)',
);

export function hiddenToolResult(name: string, length: number, limit: number): string {
  return `[Tool response for \`${name}\` hidden: response was ${length} chars, exceeding the ${limit}-char limit. Call the tool again if you need this information.]`;
}

/** The notice after a tool result cut to fit the context budget. */
export function cutToolResult(name: string, length: number, kept: number, budgetTokens: number): string {
  return `[Tool result of \`${name}\` cut: it was ${length} chars, more than fits in the context budget of ${budgetTokens} tokens; only the first ${kept} chars are shown. Ask for less at a time (a line range, a narrower search) if you need the rest.]`;
}

export const INTERRUPTED_BY_USER = 'interrupted by user';

/** A call the approval check could not be answered for: it did not run. */
export function gateUnavailableMessage(detail: string): string {
  return `The approval check did not answer (${detail}); the call was not run. Try again later.`;
}

/** A call whose approval request could not be registered: it did not run. */
export function humanUnavailableMessage(detail: string): string {
  return `The approval request could not be registered (${detail}); the call was not run. Try again later.`;
}

export function exhaustedMessage(rounds: number): string {
  return `Tool round limit reached (${rounds} rounds) without a final answer.`;
}

export const REAPED_BATCH_ERROR =
  'Sub-agent was interrupted by a restart while running in a parallel batch; its work is lost. Run it again if it is still needed.';

export const INTERRUPTED_DELEGATION_ERROR =
  'Sub-agent was interrupted by a restart before it could report back. Run it again if it is still needed.';

export function preview(text: string, max = 200): string {
  return text.length > max ? `${text.slice(0, max)}…` : text;
}

/** An image left out of a request because a vision client takes only `maxImages` (the oldest go first). */
export function imageOverCount(path: string, maxImages: number): string {
  return `[Image ${path} not shown: only the newest ${maxImages} images are sent with a request. Read it again with read_file if you need to see it.]`;
}

/** An image the service could not make ready for the model (not an image, corrupt, too large…). */
export function imageNotShown(path: string, reason: string): string {
  return `[Image ${path} not shown: ${reason}]`;
}

/** An image left out so that the request fits the context budget (the oldest go first). */
export function imageOverBudget(path: string, budgetTokens: number): string {
  return `[Image ${path} not shown: it does not fit in the context budget of ${budgetTokens} tokens. Read it again with read_file if you need to see it.]`;
}

/** An earlier turn's tool-result image, hidden like a tool result longer than the limit. */
export function hiddenToolImage(name: string, imageChars: number, limit: number): string {
  return `[Image of \`${name}\` hidden: an image counts as ${imageChars} chars, exceeding the ${limit}-char limit for earlier turns' tool results. Call the tool again if you need to see it.]`;
}
