import type { ArgumentsHost } from '@nestjs/common';
import { JsonBodyError, verifyJsonBody } from '@skald/service-kit/json-body';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { USER_CAPS, userCapReached, type UserCapName } from '@skald/contracts';
import { RemoteError } from '@skald/messaging/bus-errors';
import { frameErrorOf } from '../ws/client-frame';
import { ApiError } from './api-error';
import { ErrorFilter } from './error.filter';

function answer(e: unknown, url = '/api/sessions'): { status: number; body: unknown } {
  const out = { status: 0, body: undefined as unknown };
  const res = {
    status(code: number) {
      out.status = code;
      return res;
    },
    setHeader() {},
    json(body: unknown) {
      out.body = body;
    },
  };
  const host = {
    switchToHttp: () => ({ getResponse: () => res, getRequest: () => ({ originalUrl: url }) }),
  } as unknown as ArgumentsHost;
  new ErrorFilter({ error: () => undefined, warn: () => undefined } as never).catch(e, host);
  return out;
}

const verify = (text: string | Buffer, encoding = 'utf-8'): void =>
  verifyJsonBody(
    {} as IncomingMessage,
    {} as ServerResponse,
    Buffer.isBuffer(text) ? text : Buffer.from(text),
    encoding,
  );

describe('REST error boundary', () => {
  it("answers under /v1 in OpenAI's error shape, the rest of the API in its own", () => {
    const e = new ApiError('not_found', 'no model skald/nope', 'model');
    expect(answer(e, '/v1/chat/completions')).toEqual({
      status: 404,
      body: {
        error: {
          message: 'no model skald/nope',
          type: 'invalid_request_error',
          param: 'model',
          code: 'model_not_found',
        },
      },
    });
    expect(answer(new ApiError('unauthorized', 'missing bearer token'), '/v1/models?x=1')).toEqual({
      status: 401,
      body: {
        error: { message: 'missing bearer token', type: 'authentication_error', param: null, code: 'invalid_api_key' },
      },
    });
    expect(answer(e, '/api/v1/chat/completions').body).toEqual({
      error: { code: 'not_found', message: 'no model skald/nope', field: 'model' },
    });
    expect(answer(new Error('boom'), '/v1/models').body).toEqual({
      error: { message: 'internal error', type: 'server_error', param: null, code: 'internal' },
    });
  });

  it('answers a body refused before parsing with 400 naming the field', () => {
    expect(() => verify('{"a":{"__proto__":{}}}')).toThrow(JsonBodyError);
    let thrown: unknown;
    try {
      verify('{"role":"user","role":"admin"}');
    } catch (e) {
      thrown = e;
    }
    expect(answer(thrown)).toEqual({
      status: 400,
      body: { error: { code: 'invalid_input', message: 'role: duplicate key "role"', field: 'role' } },
    });
    expect(() => verify(Buffer.from([0x7b, 0xff, 0x7d]))).toThrow('request body is not valid UTF-8');
    expect(() => verify('{}', 'utf-16le')).toThrow('request body must be UTF-8');
    expect(() => verify(`${'['.repeat(100_000)}${']'.repeat(100_000)}`)).toThrow(': nesting deeper than 64 levels');
    expect(() => verify('{"constructor":1,"prototype":2}')).not.toThrow();
  });

  it('keeps the 4xx status of a client error raised below Nest; only the rest is a 500', () => {
    expect(answer(Object.assign(new URIError('URI malformed'), { status: 400 }))).toEqual({
      status: 400,
      body: { error: { code: 'invalid_input', message: 'invalid request' } },
    });
    expect(
      answer(Object.assign(new Error('unsupported charset'), { status: 415, type: 'charset.unsupported' })).status,
    ).toBe(415);
    expect(answer(new RangeError('Maximum call stack size exceeded'))).toEqual({
      status: 500,
      body: { error: { code: 'internal', message: 'internal error' } },
    });
  });

  it('answers text Postgres refused (a NUL byte) with 400, and any other database error with 500', () => {
    const nul = Object.assign(new Error('invalid byte sequence for encoding "UTF8": 0x00'), {
      driverError: { code: '22021' },
    });
    expect(answer(nul)).toMatchObject({ status: 400, body: { error: { code: 'invalid_input' } } });
    const other = Object.assign(new Error('deadlock detected'), { driverError: { code: '40P01' } });
    expect(answer(other)).toMatchObject({ status: 500, body: { error: { code: 'internal' } } });
  });

  it('answers a per-user cap a service refused with 429 (REST) and the same error frame (WS), naming the cap', () => {
    for (const cap of Object.keys(USER_CAPS) as UserCapName[]) {
      const body = userCapReached(cap, 5, 5);
      const e = new RemoteError(body);
      expect(answer(e)).toMatchObject({
        status: 429,
        body: { error: { code: 'rate_limited', message: body.message } },
      });
      expect(body.message).toContain(USER_CAPS[cap].env);
      expect(frameErrorOf(e)).toEqual({ error: body, unexpected: false });
    }
  });
});
