export * from './bus';
export * from './messaging.module';
