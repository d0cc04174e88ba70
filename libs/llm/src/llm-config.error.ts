/** A configuration of LLM clients that cannot be used. Never carries an API key. */
export class LlmConfigError extends Error {
  readonly code: 'llm_invalid_config' | 'llm_unknown_client';

  constructor(message: string, code: LlmConfigError['code'] = 'llm_invalid_config') {
    super(message);
    this.name = 'LlmConfigError';
    this.code = code;
  }
}
