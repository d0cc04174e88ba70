import fc from 'fast-check';
import type { ToolCallStatus } from '@skald/agent-loop';

/**
 * The fields of a generated tool-call update (a `ToolCallPatch`): each optional field absent, null or
 * set, so specs cover "leave it", "clear it" and "write it".
 */
export function toolCallPatchFields(text: fc.Arbitrary<string>, statuses: readonly ToolCallStatus[]) {
  return {
    status: fc.constantFrom(...statuses),
    result: fc.option(fc.option(text)),
    resultType: fc.option(fc.option(text)),
    requestId: fc.option(fc.option(fc.uuid())),
    previewHash: fc.option(fc.option(text)),
    staleReasks: fc.option(fc.nat({ max: 3 })),
    judgedLanding: fc.option(fc.option(fc.array(fc.option(text), { maxLength: 3 }))),
  };
}
