/** Parse the model's arguments text: the JSON value, or the raw string when it is not JSON. */
export function parseArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function stringArg(args: unknown, key: string): string | null {
  if (!isRecord(args)) return null;
  const v = args[key];
  return typeof v === 'string' ? v : null;
}
