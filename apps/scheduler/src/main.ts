import 'reflect-metadata';
import { bootstrapService, ConfigError, createLogger, instanceName, loadConfig } from '@skald/service-kit';
import { AppModule } from './app.module';
import { SchedulerConfigSchema } from './config';

async function main(): Promise<void> {
  const config = loadConfig(SchedulerConfigSchema);
  const instance = instanceName('scheduler', config.SKALD_INSTANCE);
  const log = createLogger('scheduler', config.LOG_LEVEL, instance);
  await bootstrapService({
    service: 'scheduler',
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
