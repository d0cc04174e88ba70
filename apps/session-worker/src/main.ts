import { SERVICE } from './instrument';
import 'reflect-metadata';
import { LlmManager } from '@skald/llm';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { WorkerConfigSchema } from './config';
import { sharedLlmHealth } from './llm/shared-llm-health';
import { TurnDriver } from './turns/turn-driver';

runService({
  service: SERVICE,
  schema: WorkerConfigSchema,
  module: (config, log, instance) => {
    const { health, close } = sharedLlmHealth(config, log);
    const llm = LlmManager.fromEnv(process.env, { health });
    log.info({ clients: llm.names() }, 'LLM clients configured');
    return AppModule.register(config, log, instance, llm, close);
  },
  drain: (app, config) => app.get(TurnDriver).drainAll(config.SKALD_SHUTDOWN_GRACE_MS),
});
