import 'reflect-metadata';
import { LlmManager } from '@skald/llm';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { WorkerConfigSchema } from './config';
import { TurnDriver } from './turns/turn-driver';

runService({
  service: 'session-worker',
  schema: WorkerConfigSchema,
  module: (config, log, instance) => {
    const llm = LlmManager.fromEnv(process.env);
    log.info({ clients: llm.names() }, 'LLM clients configured');
    return AppModule.register(config, log, instance, llm);
  },
  drain: (app, config) => app.get(TurnDriver).drainAll(config.SKALD_SHUTDOWN_GRACE_MS),
});
