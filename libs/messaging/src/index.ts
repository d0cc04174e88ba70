export * from './bus';
export * from './bus-port';
export * from './messaging.module';
export * from './database-input';
export * from './forwarded';
export * from './sent-at';
export * from './hop-trace';
export * from './no-responder-retry';
