import { SERVICE } from './instrument';
import 'reflect-metadata';
import { runService } from '@skald/service-kit';
import { AppModule } from './app.module';
import { GatewayConfigSchema } from './config';
import { wireGateway } from './gateway-app';

runService({
  service: SERVICE,
  schema: GatewayConfigSchema,
  module: (config, log, instance) => AppModule.register(config, log, instance),
  configure: (app, _config, log) => wireGateway(app, log),
});
