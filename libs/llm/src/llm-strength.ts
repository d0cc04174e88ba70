/** How capable a model is, weakest first. AUTO selection compares these. */
export const LLM_STRENGTHS = ['very_low', 'low', 'medium', 'high', 'very_high'] as const;

export type LlmStrength = (typeof LLM_STRENGTHS)[number];

export function isLlmStrength(value: unknown): value is LlmStrength {
  return typeof value === 'string' && (LLM_STRENGTHS as readonly string[]).includes(value);
}

/** 0 for `very_low` … 4 for `very_high`. */
export function strengthRank(strength: LlmStrength): number {
  return LLM_STRENGTHS.indexOf(strength);
}
