import { ApprovalPreview, DECISIONS_MAX_PREVIEW_CHARS, type DecisionsReply } from '@skald/contracts';
import { decisionOf } from './request-decision';
import type { StoredRequest } from './requests.repository';

type DecisionItem = DecisionsReply['items'][number];

/** A stored preview as the card showed it, or none when the row's JSON is not one (a row of an older shape). */
function previewOf(r: StoredRequest): ApprovalPreview | undefined {
  const parsed = ApprovalPreview.safeParse(r.preview);
  if (!parsed.success) return undefined;
  const { base_hash: _hash, ...shown } = parsed.data;
  return shown;
}

const previewChars = (p: ApprovalPreview): number => p.new_content.length + (p.old_content?.length ?? 0);

/**
 * The settled cards of answered requests (in `rows`' order), each with who answered and the file
 * change its card showed. Previews are bounded per reply: the newest calls keep theirs first, an
 * older one past `maxPreviewChars` goes without (its card shows the arguments). An edited call's
 * preview is of the call as asked, not as run, so it goes without too.
 */
export function decisionItems(
  rows: readonly StoredRequest[],
  maxPreviewChars = DECISIONS_MAX_PREVIEW_CHARS,
): DecisionItem[] {
  const settled = rows.filter(
    (r): r is StoredRequest & { status: DecisionItem['status'] } =>
      r.status === 'approved' || r.status === 'rejected' || r.status === 'cancelled',
  );
  const withPreview = new Set<string>();
  let budget = maxPreviewChars;
  for (let i = settled.length - 1; i >= 0; i--) {
    const r = settled[i];
    const preview = r.editedArguments === null ? previewOf(r) : undefined;
    if (!preview || previewChars(preview) > budget) continue;
    budget -= previewChars(preview);
    withPreview.add(r.id);
  }
  return settled.map((r) => {
    const preview = withPreview.has(r.id) ? previewOf(r) : undefined;
    return {
      tool_call_id: r.toolCallId,
      request_id: r.id,
      status: r.status,
      ...decisionOf(r),
      ...(preview ? { preview } : {}),
    };
  });
}
