import type { IncomingMessage, ServerResponse } from 'node:http';

/** Small node:http helpers shared by the sim's routes. */

export const MAX_BODY_BYTES = 32 * 1024 * 1024;

export class SimBodyTooLarge extends Error {}

export function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new SimBodyTooLarge(`request body larger than ${MAX_BODY_BYTES} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

export function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) as unknown };
  } catch {
    return { ok: false };
  }
}

export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/** An error body in OpenAI's shape. */
export function openAiError(
  message: string,
  type: string,
  param: string | null = null,
  code: string | null = null,
): unknown {
  return { error: { message, type, param, code } };
}

const CREDENTIAL_HEADERS = new Set(['authorization', 'api-key', 'x-api-key', 'proxy-authorization']);

/** Request headers without credentials; values of repeated headers joined by ', '. */
export function redactedHeaders(req: IncomingMessage): { headers: Record<string, string>; authorization: boolean } {
  const headers: Record<string, string> = {};
  let authorization = false;
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    if (CREDENTIAL_HEADERS.has(name)) {
      authorization = true;
      continue;
    }
    headers[name] = Array.isArray(value) ? value.join(', ') : value;
  }
  return { headers, authorization };
}

/** Resolves after `ms`, or at once when the signal fires (the client went away). */
export function pause(ms: number, signal: AbortSignal): Promise<void> {
  if (ms <= 0 || signal.aborted) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done(): void {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
