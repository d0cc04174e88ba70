import 'reflect-metadata';
import { LlmManager } from '@skald/llm';
import { bootstrapService, ConfigError, createLogger, instanceName, loadConfig } from '@skald/service-kit';
import { AppModule } from './app.module';
import { WorkerConfigSchema } from './config';
import { TurnDriver } from './turns/turn-driver';

async function main(): Promise<void> {
  const config = loadConfig(WorkerConfigSchema);
  const instance = instanceName('session-worker', config.SKALD_INSTANCE);
  const log = createLogger('session-worker', config.LOG_LEVEL, instance);
  const llm = LlmManager.fromEnv(process.env);
  log.info({ clients: llm.names() }, 'LLM clients configured');
  await bootstrapService({
    service: 'session-worker',
    module: AppModule.register(config, log, instance, llm),
    port: config.PORT,
    host: config.HOST,
    log,
    graceMs: config.SKALD_SHUTDOWN_GRACE_MS,
    drain: (app) => app.get(TurnDriver).drainAll(config.SKALD_SHUTDOWN_GRACE_MS),
  });
}

main().catch((e: unknown) => {
  console.error(e instanceof ConfigError ? e.message : e);
  process.exit(1);
});
