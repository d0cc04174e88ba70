import 'reflect-metadata';
import type { Server } from 'node:http';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { AuthService } from './auth/auth.service';
import { GatewayConfigSchema } from './config';
import { WsServer } from './ws/ws.server';

runService({
  service: 'gateway',
  schema: GatewayConfigSchema,
  module: (config, log, instance) => AppModule.register(config, log, instance),
  configure: async (app, _config, log) => {
    app.get(WsServer).attach(app.getHttpServer() as Server);
    const admin = await app.get(AuthService).bootstrapAdmin();
    log.info(
      { admin },
      admin === 'not_configured'
        ? 'no admin configured (SKALD_ADMIN_EMAIL / SKALD_ADMIN_PASSWORD)'
        : 'admin account checked',
    );
  },
});
