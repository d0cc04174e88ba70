import { redactedUrlAttributes, telemetrySettings } from './telemetry';

describe('telemetrySettings', () => {
  it('is off unless an endpoint or an exporter is named', () => {
    expect(telemetrySettings({})).toMatchObject({ enabled: false });
    expect(telemetrySettings({ OTEL_SERVICE_NAME: 'x' })).toMatchObject({ enabled: false });
  });

  it('takes the standard endpoint, or SKALD_OTLP_ENDPOINT as its alias (the standard one wins)', () => {
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' })).toEqual({
      enabled: true,
      reason: 'http://c:4318',
      env: {},
    });
    expect(telemetrySettings({ OTEL_EXPORTER_OTLP_TRACES_ENDPOINT: 'http://c:4318/v1/traces' })).toMatchObject({
      enabled: true,
      env: {},
    });
    expect(telemetrySettings({ SKALD_OTLP_ENDPOINT: 'http://old:4318/' })).toEqual({
      enabled: true,
      reason: 'http://old:4318',
      env: { OTEL_EXPORTER_OTLP_ENDPOINT: 'http://old:4318' },
    });
    expect(
      telemetrySettings({ SKALD_OTLP_ENDPOINT: 'http://old:4318', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://new:4318' }),
    ).toEqual({ enabled: true, reason: 'http://new:4318', env: {} });
    expect(telemetrySettings({ OTEL_TRACES_EXPORTER: 'console' })).toMatchObject({ enabled: true });
  });

  it('is off with OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none, whatever the endpoint', () => {
    expect(
      telemetrySettings({ OTEL_SDK_DISABLED: 'true', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://c:4318' }),
    ).toMatchObject({
      enabled: false,
    });
    expect(telemetrySettings({ OTEL_TRACES_EXPORTER: 'none', SKALD_OTLP_ENDPOINT: 'http://c:4318' })).toMatchObject({
      enabled: false,
    });
  });
});

describe('redactedUrlAttributes', () => {
  const req = { url: '/api/files?path=secret.txt&token=abc', headers: { host: 'gw:3000' } };

  it('replaces the URL attributes of the conventions in use by ones without the query', () => {
    expect(redactedUrlAttributes(req, {})).toEqual({
      'http.target': '/api/files',
      'http.url': 'http://gw:3000/api/files',
    });
    expect(redactedUrlAttributes(req, { OTEL_SEMCONV_STABILITY_OPT_IN: 'http' })).toEqual({ 'url.query': 'REDACTED' });
    expect(redactedUrlAttributes(req, { OTEL_SEMCONV_STABILITY_OPT_IN: 'http/dup' })).toEqual({
      'http.target': '/api/files',
      'http.url': 'http://gw:3000/api/files',
      'url.query': 'REDACTED',
    });
  });

  it('leaves a URL without a query as the instrumentation records it', () => {
    expect(redactedUrlAttributes({ url: '/api/x', headers: {} }, {})).toEqual({});
  });
});
