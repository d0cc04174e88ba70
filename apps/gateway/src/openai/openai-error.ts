/** The error body OpenAI's API answers with, which every OpenAI client library reads. */
export interface OpenAiErrorBody {
  error: { message: string; type: string; param: string | null; code: string | null };
}

/** The path prefix of the OpenAI-compatible endpoint: its errors take OpenAI's shape. */
export const OPENAI_PATH_PREFIX = '/v1/';

/** Whether a request path (without its query) is under the OpenAI-compatible endpoint. */
export function isOpenAiPath(url: string | undefined): boolean {
  const path = (url ?? '').split('?')[0] ?? '';
  return path.startsWith(OPENAI_PATH_PREFIX) || path === '/v1';
}

/** OpenAI's error `type` for an HTTP status. */
function typeOf(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'invalid_request_error';
  if (status === 429) return 'rate_limit_error';
  if (status >= 500) return 'server_error';
  return 'invalid_request_error';
}

/**
 * A Skald error (`{code, message, field?}`) in OpenAI's shape: `param` is the field, `code` the
 * code OpenAI's clients know where there is one (`invalid_api_key`, `model_not_found`), else Skald's.
 */
export function toOpenAiError(status: number, e: { code: string; message: string; field?: string }): OpenAiErrorBody {
  const code = status === 401 ? 'invalid_api_key' : status === 404 && e.field === 'model' ? 'model_not_found' : e.code;
  return { error: { message: e.message, type: typeOf(status), param: e.field ?? null, code } };
}
