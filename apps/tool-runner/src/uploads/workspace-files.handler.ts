import { Injectable, OnModuleInit } from '@nestjs/common';
import { ErrorCode } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';
import { RemoteError } from '@skald/messaging/bus-errors';
import { ToolError, ToolErrorCode } from '../tool-error';
import { WorkspaceFilesService } from './workspace-files.service';

/** How a workspace error reads to a REST client (the gateway maps the code to a status). */
const CODE: Record<ToolErrorCode, ErrorCode> = {
  invalid_argument: 'invalid_input',
  not_found: 'not_found',
  outside_workspace: 'not_found',
  forbidden: 'not_found',
  not_a_file: 'not_found',
  not_a_directory: 'not_found',
  binary: 'invalid_input',
  too_large: 'too_large',
  quota_exceeded: 'too_large',
  timed_out: 'unavailable',
  stopped: 'unavailable',
  unavailable: 'unavailable',
  io: 'internal',
  stale: 'conflict',
};

/**
 * A workspace error as the coded error the bus answers with: an answer about the request (a missing
 * file, a path outside the workspace…) is a RemoteError, which the bus answers without logging a
 * failed handler; an I/O failure stays an internal error, which it logs.
 */
export function asWireError(e: unknown): unknown {
  if (!(e instanceof ToolError)) return e;
  const code = CODE[e.code];
  if (code === 'internal') return Object.assign(new Error(e.message), { code });
  return new RemoteError({ code, message: e.message });
}

/** NATS edge of workspace files for the gateway: `files.upload` (one chunk) and `files.read`. */
@Injectable()
export class WorkspaceFilesHandler implements OnModuleInit {
  constructor(
    private readonly bus: Bus,
    private readonly files: WorkspaceFilesService,
  ) {}

  onModuleInit(): void {
    this.bus.handle('files.upload', (req) =>
      this.files.upload(req).catch((e: unknown) => {
        throw asWireError(e);
      }),
    );
    this.bus.handle('files.read', (req) =>
      this.files.read(req).catch((e: unknown) => {
        throw asWireError(e);
      }),
    );
  }
}
