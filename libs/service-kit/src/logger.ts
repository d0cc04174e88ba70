import { hostname } from 'node:os';
import pino, { DestinationStream, Logger } from 'pino';
import { currentLogIds } from './log-context';

export type { Logger } from 'pino';

/** Keys whose values never reach a log line. */
const REDACT = [
  'password',
  '*.password',
  'token',
  '*.token',
  'authorization',
  '*.authorization',
  'apiKey',
  '*.apiKey',
  'api_key',
  '*.api_key',
  'secret',
  '*.secret',
  'headers.authorization',
  'req.headers.authorization',
  'env',
  '*.env',
];

export function instanceName(service: string, configured?: string): string {
  return configured ?? `${service}-${hostname()}-${process.pid}`;
}

/**
 * JSON logs (pino) with the service and instance on every line, and the user, session, turn and
 * tool call ids of the context the line is written in (`withLogIds`).
 */
export function createLogger(
  service: string,
  level: string,
  instance: string,
  destination?: DestinationStream,
): Logger {
  const options = {
    level,
    base: { service, instance },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
    mixin: () => ({ ...currentLogIds() }),
  };
  return destination ? pino(options, destination) : pino(options);
}
