export * from './config';
export * from './logger';
export * from './log-context';
export * from './ops';
export * from './public-route';
export * from './bootstrap';
export * from './tracing';
