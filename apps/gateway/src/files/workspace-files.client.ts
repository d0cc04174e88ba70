import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { Inject, Injectable } from '@nestjs/common';
import busboy from 'busboy';
import { Actor, Attachment, FILE_CHUNK_BYTES } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { ApiError, callService } from '../http/api-error';
import { GATEWAY_CONFIG, GatewayConfig } from '../config';
import { contentTypeOf } from './content-headers';

const UNAVAILABLE = 'no tool runner is available; retry shortly';
/** Bytes of multipart framing (boundaries, part headers) allowed beyond the file itself. */
const FRAMING_BYTES = 64 * 1024;

/** A workspace file being served: its resolved path and size, and its bytes chunk by chunk. */
export interface ServedFile {
  path: string;
  name: string;
  size: number;
  chunks: AsyncGenerator<Buffer>;
}

/**
 * The gateway's side of workspace files. The tool runner owns the workspaces, so bytes cross NATS
 * in chunks of `FILE_CHUNK_BYTES` (a NATS message is bounded): an upload is streamed from the
 * multipart body chunk by chunk, each acknowledged before the next is read (backpressure), and a
 * download is read the same way.
 */
@Injectable()
export class WorkspaceFilesClient {
  constructor(
    private readonly bus: Bus,
    @Inject(GATEWAY_CONFIG) private readonly config: GatewayConfig,
  ) {}

  get maxUploadBytes(): number {
    return this.config.SKALD_UPLOAD_MAX_BYTES;
  }

  /**
   * Stores the multipart field `file` of the request in the actor's workspace (`uploads/`). One
   * file per request; any other field or part is refused; a body past the limit is 413 before
   * anything is stored.
   */
  async upload(actor: Actor, req: IncomingMessage): Promise<Attachment> {
    const max = this.config.SKALD_UPLOAD_MAX_BYTES;
    const declared = Number(req.headers['content-length'] ?? NaN);
    if (Number.isFinite(declared) && declared > max + FRAMING_BYTES) throw tooLarge(max);
    let parser: busboy.Busboy;
    try {
      parser = busboy({
        headers: req.headers,
        // busboy signals a limit once it is reached: `files`/`fields` fire on the first part past them,
        // `parts` only stops parsing (one file, then whatever follows is refused as a second part).
        limits: { fileSize: max, files: 1, fields: 0, parts: 2, headerPairs: 20, fieldNameSize: 100 },
        defParamCharset: 'utf8',
      });
    } catch (e) {
      throw new ApiError('invalid_input', `expected a multipart/form-data body: ${(e as Error).message}`);
    }
    return new Promise<Attachment>((resolve, reject) => {
      let started = false;
      let settled = false;
      let file: Readable | undefined;
      const fail = (e: Error): void => {
        if (settled) return;
        settled = true;
        file?.destroy();
        req.unpipe(parser);
        req.resume(); // drain what the client still sends, so the error can be answered
        reject(e);
      };
      parser.on('file', (field, stream, info) => {
        if (field !== 'file' || started) {
          stream.resume();
          fail(
            new ApiError(
              'invalid_input',
              `the file must be sent in the multipart field "file", not "${field.slice(0, 100)}"`,
              'file',
            ),
          );
          return;
        }
        started = true;
        file = stream;
        // The runner keeps the last segment and at most 200 bytes of it: the tail carries all it can use.
        this.pump(actor, (info.filename || 'upload').slice(-1024), stream).then(
          (a) => {
            if (settled) return;
            settled = true;
            resolve(a);
          },
          (e: unknown) => fail(e instanceof Error ? e : new Error(String(e))),
        );
      });
      parser.on('field', (name) =>
        fail(new ApiError('invalid_input', `unexpected field "${name.slice(0, 100)}": send only "file"`)),
      );
      parser.on('filesLimit', () => fail(new ApiError('invalid_input', 'send one file per request')));
      parser.on('fieldsLimit', () => fail(new ApiError('invalid_input', 'send only the field "file"')));
      parser.on('error', (e: Error) => fail(new ApiError('invalid_input', `malformed multipart body: ${e.message}`)));
      parser.on('close', () => {
        if (!started) fail(new ApiError('invalid_input', 'no file: send it in the multipart field "file"', 'file'));
      });
      req.on('error', fail);
      req.on('aborted', () => fail(new ApiError('invalid_input', 'the upload was aborted')));
      req.pipe(parser);
    });
  }

  /** Reads a workspace file of the actor for serving; the first chunk fixes its size. */
  async open(actor: Actor, path: string): Promise<ServedFile> {
    const max = this.config.SKALD_FILES_MAX_BYTES;
    const first = await this.read(actor, path, 0);
    if (first.size > max)
      throw new ApiError('too_large', `the file is ${first.size} bytes; files up to ${max} bytes are served`);
    const resolved = first.path;
    return {
      path: resolved,
      name: resolved.split('/').pop() || 'file',
      size: first.size,
      chunks: this.chunks(actor, resolved, first.size, Buffer.from(first.data, 'base64')),
    };
  }

  /** The file's bytes from its first chunk on; bounded: at most size / FILE_CHUNK_BYTES reads, and a file that shrank meanwhile ends early. */
  private async *chunks(actor: Actor, path: string, size: number, first: Buffer): AsyncGenerator<Buffer> {
    let buf = first;
    let offset = 0;
    while (buf.length > 0) {
      const take = buf.subarray(0, Math.min(buf.length, size - offset));
      yield take;
      offset += take.length;
      if (offset >= size) return;
      buf = Buffer.from((await this.read(actor, path, offset)).data, 'base64');
    }
  }

  private read(actor: Actor, path: string, offset: number) {
    return callService(UNAVAILABLE, () =>
      this.bus.call('files.read', { actor, path, offset, length: FILE_CHUNK_BYTES }),
    );
  }

  /** Sends the file stream to the tool runner in acknowledged chunks; the last (maybe empty) one stores it. */
  private async pump(actor: Actor, filename: string, stream: Readable): Promise<Attachment> {
    const uploadId = randomUUID();
    const mimetype = contentTypeOf(filename);
    let offset = 0;
    const send = async (part: Buffer, last: boolean) => {
      const r = await callService(UNAVAILABLE, () =>
        this.bus.call('files.upload', {
          actor,
          upload_id: uploadId,
          name: filename,
          mimetype,
          offset,
          data: part.toString('base64'),
          last,
        }),
      );
      offset += part.length;
      return r;
    };
    let pending = Buffer.alloc(0);
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= FILE_CHUNK_BYTES) {
        await send(pending.subarray(0, FILE_CHUNK_BYTES), false);
        pending = pending.subarray(FILE_CHUNK_BYTES);
      }
    }
    // busboy ends the stream at the limit and marks it truncated: nothing is stored then.
    if ((stream as Readable & { truncated?: boolean }).truncated) throw tooLarge(this.config.SKALD_UPLOAD_MAX_BYTES);
    const { attachment } = await send(pending, true);
    if (!attachment) throw new ApiError('internal', 'the tool runner did not confirm the upload');
    return attachment;
  }
}

function tooLarge(max: number): ApiError {
  return new ApiError('too_large', `the file is larger than the upload limit of ${max} bytes`, 'file');
}
