import { z } from 'zod';
import { ErrorBody } from './common';

/**
 * Every NATS request is answered with this envelope: the owning service never throws across the
 * wire; `not_found` is also the answer for an id that belongs to somebody else.
 */
export const replyOf = <T extends z.ZodType>(data: T) =>
  z.discriminatedUnion('ok', [
    z.object({ ok: z.literal(true), data }),
    z.object({ ok: z.literal(false), error: ErrorBody }),
  ]);
