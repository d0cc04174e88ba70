import 'reflect-metadata';
import { bootstrapService, ConfigError, createLogger, instanceName, loadConfig } from '@skald/service-kit';
import { AppModule } from './app.module';
import { ApprovalConfigSchema } from './config';

async function main(): Promise<void> {
  const config = loadConfig(ApprovalConfigSchema);
  const instance = instanceName('approval-service', config.SKALD_INSTANCE);
  const log = createLogger('approval-service', config.LOG_LEVEL, instance);
  await bootstrapService({
    service: 'approval-service',
    module: AppModule.register(config, log, instance),
    port: config.PORT,
    host: config.HOST,
    log,
    graceMs: config.SKALD_SHUTDOWN_GRACE_MS,
  });
}

main().catch((e: unknown) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
