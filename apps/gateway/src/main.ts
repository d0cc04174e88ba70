import 'reflect-metadata';
import type { Server } from 'node:http';
import { bootstrapService, ConfigError, createLogger, instanceName, loadConfig } from '@skald/service-kit';
import { AppModule } from './app.module';
import { AuthService } from './auth/auth.service';
import { GatewayConfigSchema } from './config';
import { WsServer } from './ws/ws.server';

async function main(): Promise<void> {
  const config = loadConfig(GatewayConfigSchema);
  const instance = instanceName('gateway', config.SKALD_INSTANCE);
  const log = createLogger('gateway', config.LOG_LEVEL, instance);
  await bootstrapService({
    service: 'gateway',
    module: AppModule.register(config, log, instance),
    port: config.PORT,
    host: config.HOST,
    log,
    graceMs: config.SKALD_SHUTDOWN_GRACE_MS,
    configure: async (app) => {
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
}

main().catch((e: unknown) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
