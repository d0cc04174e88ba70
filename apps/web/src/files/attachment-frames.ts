import type { Attachment } from '@skald/contracts';

export type { Attachment };

/** The attachments a `user_message` frame carries (only well-formed ones; absent when none). */
export function attachmentsOf(f: Record<string, unknown>): Attachment[] | undefined {
  if (!Array.isArray(f.attachments)) return undefined;
  const out = f.attachments.filter(
    (a): a is Attachment =>
      !!a &&
      typeof a === 'object' &&
      typeof (a as Attachment).path === 'string' &&
      typeof (a as Attachment).name === 'string',
  );
  return out.length > 0 ? out : undefined;
}
