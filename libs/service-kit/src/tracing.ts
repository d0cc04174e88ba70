import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import type { Logger } from 'pino';

export interface TracingHandle {
  /** Flushes what is buffered and stops exporting (at shutdown). */
  shutdown(): Promise<void>;
}

/**
 * OpenTelemetry traces, off by default. With `SKALD_OTLP_ENDPOINT` (an OTLP/HTTP collector, e.g.
 * `http://otel-collector:4318`) spans are exported to `<endpoint>/v1/traces`; the W3C trace context
 * travels in NATS headers (see `Bus`), so one user message is one trace across the gateway, the
 * session worker, the approval service and the tool runner. Without it the API's no-op tracer runs.
 */
export function startTracing(
  service: string,
  instance: string,
  endpoint: string | undefined,
  log: Logger,
): TracingHandle | null {
  if (!endpoint) return null;
  const provider = new NodeTracerProvider({
    resource: resourceFromAttributes({ 'service.name': service, 'service.instance.id': instance }),
    spanProcessors: [
      new BatchSpanProcessor(new OTLPTraceExporter({ url: `${endpoint.replace(/\/+$/, '')}/v1/traces` }), {
        scheduledDelayMillis: 1000,
      }),
    ],
  });
  provider.register();
  log.info({ endpoint }, 'exporting traces (OTLP/HTTP)');
  return { shutdown: () => provider.shutdown() };
}
