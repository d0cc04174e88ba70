export * from './stack';
export * from './ws-client';
export * from './api-client';
export * from './free-port';
export * from './private-services';
