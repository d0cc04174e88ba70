/** Shapes shared by the mappers that turn session rows into loop rows and contract DTOs. */

/** A timestamp column as ISO 8601. */
export const iso = (v: unknown): string => (v instanceof Date ? v.toISOString() : String(v));

/** Stored tool arguments (the model's raw JSON text) as the object it sent, or the raw string if it was not one. */
export function parseToolArguments(text: string): Record<string, unknown> | string {
  try {
    const v: unknown = JSON.parse(text);
    return v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : text;
  } catch {
    return text;
  }
}
