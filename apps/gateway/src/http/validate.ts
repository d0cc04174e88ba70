import { z } from 'zod';
import { describeZodError } from '@skald/contracts';
import { ApiError } from './api-error';

/** Parses input with its contract schema; a failure is a 400 naming the field. */
export function validate<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const { field, message } = describeZodError(parsed.error);
  throw new ApiError('invalid_input', message, field);
}
