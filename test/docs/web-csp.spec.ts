// docs/web.md states the web client's Content-Security-Policy; it must be the one the gateway sends.
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { CONTENT_SECURITY_POLICY } from '../../apps/gateway/src/web/web.controller';

describe('docs/web.md', () => {
  it('states the Content-Security-Policy the gateway serves', () => {
    const doc = readFileSync(join(__dirname, '..', '..', 'docs', 'web.md'), 'utf8');
    const stated = /`Content-Security-Policy: ([^`]+)`/.exec(doc)?.[1];
    expect(stated).toBe(CONTENT_SECURITY_POLICY);
  });
});
