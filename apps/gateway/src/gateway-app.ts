import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { Logger } from '@skald/service-kit';
import { AuthService } from './auth/auth.service';
import { WsServer } from './ws/ws.server';

/** What the gateway adds to its Nest app before it listens: the WebSocket upgrade and the first admin. */
export async function wireGateway(app: INestApplication, log: Logger): Promise<void> {
  app.get(WsServer).attach(app.getHttpServer() as Server);
  const admin = await app.get(AuthService).bootstrapAdmin();
  log.info(
    { admin },
    admin === 'not_configured'
      ? 'no admin configured (SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD)'
      : 'admin account checked',
  );
}
