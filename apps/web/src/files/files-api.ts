import type { Attachment } from '@skald/contracts';
import type { Api } from '../api';

export type { Attachment };

/** Uploads one file into the caller's workspace (`uploads/`): the attachment a message carries. */
export function uploadFile(api: Api, source: string, file: File): Promise<Attachment> {
  return api.client.upload(source, file, file.name || 'pasted');
}

/** A workspace file's bytes and type (the bearer token cannot ride in a plain link). */
export function fetchFile(api: Api, path: string): Promise<Blob> {
  return api.client.file(path);
}
