import type { IncomingMessage } from 'node:http';
import { Controller, Param, Query, Req, Res } from '@nestjs/common';
import { Actor, ROUTES, Source } from '@skald/contracts';
import { CurrentActor } from '../auth/actor.decorator';
import { validate } from '../http/validate';
import { fileHeaders } from './content-headers';
import { WorkspaceFilesClient } from './workspace-files.client';
import { Route } from '../http/route.decorator';

interface FileRes {
  setHeader(name: string, value: string): void;
  status(code: number): FileRes;
  write(chunk: Buffer): boolean;
  end(): void;
  destroy(): void;
  once(event: 'drain', cb: () => void): void;
}

@Controller()
export class WorkspaceFilesController {
  constructor(private readonly files: WorkspaceFilesClient) {}

  @Route(ROUTES.uploadFile)
  upload(@CurrentActor() actor: Actor, @Param('source') source: string, @Req() req: IncomingMessage) {
    validate(Source, source);
    return this.files.upload(actor, req);
  }

  @Route(ROUTES.getFile)
  async serve(@CurrentActor() actor: Actor, @Query() query: unknown, @Res() res: FileRes): Promise<void> {
    const { path } = validate(ROUTES.getFile.query, query);
    const file = await this.files.open(actor, path);
    for (const [k, v] of Object.entries(fileHeaders(file.name, file.size))) res.setHeader(k, v);
    res.status(200);
    try {
      for await (const chunk of file.chunks) {
        if (!res.write(chunk)) await new Promise<void>((r) => res.once('drain', r));
      }
      res.end();
    } catch {
      // The headers are gone: a failure mid-file can only cut the response short.
      res.destroy();
    }
  }
}
