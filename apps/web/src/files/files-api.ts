import type { Attachment } from '@skald/contracts';
import { ApiError, type Api } from '../api';

export type { Attachment };

async function failure(res: Response): Promise<ApiError> {
  const data = (await res.json().catch(() => ({}))) as { error?: { code: string; message: string; field?: string } };
  const e = data.error ?? { code: 'error', message: res.statusText };
  return new ApiError(res.status, e.code, e.message, e.field);
}

/** Uploads one file into the caller's workspace (`uploads/`): the attachment a message carries. */
export async function uploadFile(api: Api, source: string, file: File): Promise<Attachment> {
  const body = new FormData();
  body.append('file', file, file.name || 'pasted');
  const res = await fetch(`/api/${encodeURIComponent(source)}/uploads`, {
    method: 'POST',
    headers: { authorization: `Bearer ${api.auth.token}` },
    body,
  });
  if (!res.ok) throw await failure(res);
  return (await res.json()) as Attachment;
}

/** A workspace file's bytes and type (the bearer token cannot ride in a plain link). */
export async function fetchFile(api: Api, path: string): Promise<Blob> {
  const res = await fetch(`/api/files?path=${encodeURIComponent(path)}`, {
    headers: { authorization: `Bearer ${api.auth.token}` },
  });
  if (!res.ok) throw await failure(res);
  return res.blob();
}
