import type { Server } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Logger } from '@skald/service-kit';
import { AuthService } from './auth/auth.service';
import { GATEWAY_CONFIG, GatewayConfig } from './config';
import { devProxy, devServerUrl } from './web/dev-proxy';
import { WsServer } from './ws/ws.server';

/**
 * What the gateway adds to its Nest app before it listens: which proxies may name the client's
 * address (login throttling counts per address), the WebSocket upgrade, the first admin.
 */
export async function wireGateway(app: INestApplication, log: Logger): Promise<void> {
  const config = app.get<GatewayConfig>(GATEWAY_CONFIG);
  const trust = config.SKALD_TRUST_PROXY;
  if (trust) (app as NestExpressApplication).set('trust proxy', /^\d+$/.test(trust) ? Number(trust) : trust);
  const dev = devServerUrl(config);
  if (dev) {
    app.use(devProxy(dev));
    log.warn({ url: dev.origin }, 'dev mode: the web client is served by the Vite dev server');
  }
  app.get(WsServer).attach(app.getHttpServer() as Server);
  const admin = await app.get(AuthService).bootstrapAdmin();
  log.info(
    { admin },
    admin === 'not_configured'
      ? 'no admin configured (SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD)'
      : 'admin account checked',
  );
}
