import { startTelemetry } from '@skald/service-kit/telemetry';

/** This app's name in its logs, metrics and traces. */
export const SERVICE = 'session-worker';

// First of all (main imports this module before any other): the SDK's HTTP, Postgres and Redis
// instrumentation patch those modules as they are loaded.
startTelemetry(SERVICE);
