export * from './config';
export * from './logger';
export * from './log-context';
export * from './ops';
export * from './bootstrap';
export * from './tracing';
export * from './bounded-json';
export * from './json-body';
