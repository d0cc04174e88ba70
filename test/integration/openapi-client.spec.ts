// The API document as a client developer meets it, from a live gateway: openapi-typescript (the
// maintained generator) makes types of the served document and a fixture that calls every
// operation with openapi-fetch type-checks against them; the fixture's list of calls is keyed by
// the route table's operationIds, so a route without a call fails to compile. And the document's
// page at /docs (swagger-ui-dist, from this origin) renders every operation under the web client's
// Content-Security-Policy with no violation, at 1280, 375 and 320 px.
import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import ts from 'typescript';
import type { Browser } from 'playwright-core';
import { OPERATION_IDS } from '@skald/contracts';
import { PrivateNats } from '@skald/testing';
import { CONTENT_SECURITY_POLICY } from '../../apps/gateway/src/web/web.controller';
import { launchChromium, seriousViolations, SHOTS } from '../support/browser';
import { ROOT } from '../support/db';
import { gatewayEnv, InProcessGateway, startGateway } from '../support/gateway-app';

jest.setTimeout(180_000);

const FIXTURE = path.join(ROOT, 'test/fixtures/openapi-client/every-operation.ts');
const OUT = path.join(ROOT, 'test-results/openapi-client');

/** What the page's scripts see of the browser (this file is compiled without the DOM library). */
interface PageGlobals {
  cspViolations: string[];
  innerWidth: number;
  document: {
    documentElement: { scrollWidth: number };
    addEventListener(
      type: 'securitypolicyviolation',
      listener: (e: { violatedDirective: string; blockedURI: string }) => void,
    ): void;
  };
}

/** Type-checks files with the repository's compiler options: the messages of their errors, per file. */
function typeErrors(files: string[]): Map<string, string[]> {
  const config = ts.getParsedCommandLineOfConfigFile(
    path.join(ROOT, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (d) => {
        throw new Error(ts.flattenDiagnosticMessageText(d.messageText, '\n'));
      },
    },
  )!;
  const program = ts.createProgram(files, { ...config.options, noEmit: true });
  return new Map(
    files.map((f) => [
      f,
      ts
        .getPreEmitDiagnostics(program, program.getSourceFile(f))
        .map((d) => ts.flattenDiagnosticMessageText(d.messageText, '\n')),
    ]),
  );
}

describe('the API document, as a generated client and as a page', () => {
  let nats: PrivateNats;
  let gw: InProcessGateway;
  let browser: Browser;

  beforeAll(async () => {
    nats = await PrivateNats.start();
    gw = await startGateway(gatewayEnv({ NATS_URL: nats.url }), `gw-openapi-${process.pid}`);
    rmSync(OUT, { recursive: true, force: true });
    mkdirSync(OUT, { recursive: true });
    mkdirSync(SHOTS, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await gw?.close();
    await nats?.destroy();
  });

  it('openapi-typescript generates types from the served document, and a call of every operation type-checks', async () => {
    const res = await fetch(`${gw.url}/api/docs`);
    expect(res.status).toBe(200);
    writeFileSync(path.join(OUT, 'openapi.json'), await res.text());
    execFileSync(
      process.execPath,
      [
        path.join(ROOT, 'node_modules/openapi-typescript/bin/cli.js'),
        path.join(OUT, 'openapi.json'),
        '--output',
        path.join(OUT, 'skald-api.d.ts'),
        // a default makes a field optional to send (zod's input), not present in what is read
        '--default-non-nullable',
        'false',
      ],
      { timeout: 60_000, stdio: 'pipe' },
    );
    const generated = readFileSync(path.join(OUT, 'skald-api.d.ts'), 'utf8');
    // the generator's `operations` interface: one entry per operationId
    for (const id of OPERATION_IDS) expect(generated).toMatch(new RegExp(`^ {4}${id}: \\{$`, 'm'));

    const fixture = readFileSync(FIXTURE, 'utf8');
    const good = path.join(OUT, 'every-operation.ts');
    copyFileSync(FIXTURE, good);
    // the check can fail: a route left out, a body field of the wrong type, an answer read as another's
    const missing = path.join(OUT, 'missing-operation.ts');
    writeFileSync(missing, fixture.replace(/^ {2}triggerTic: .*\n/m, ''));
    const wrongBody = path.join(OUT, 'wrong-body.ts');
    writeFileSync(wrongBody, fixture.replace("body: { name: 'laptop' }", 'body: { name: 7 }'));
    const wrongAnswer = path.join(OUT, 'wrong-answer.ts');
    writeFileSync(
      wrongAnswer,
      fixture.replace("(await client.GET('/api/sessions')).data", "(await client.GET('/api/inbox')).data"),
    );
    const unknownPath = path.join(OUT, 'unknown-path.ts');
    writeFileSync(unknownPath, fixture.replace("client.GET('/api/inbox')", "client.GET('/api/inboxes')"));
    expect(fixture).not.toBe(readFileSync(missing, 'utf8'));

    const errors = typeErrors([good, missing, wrongBody, wrongAnswer, unknownPath]);
    expect(errors.get(good)).toEqual([]);
    expect(errors.get(missing)!.join('\n')).toMatch(/Property 'triggerTic' is missing/);
    expect(errors.get(wrongBody)!.join('\n')).toMatch(/Type 'number' is not assignable to type 'string'/);
    expect(errors.get(wrongAnswer)!.length).toBeGreaterThan(0);
    expect(errors.get(unknownPath)!.length).toBeGreaterThan(0);
  });

  it('/docs renders every operation with swagger-ui from this origin, under the web client’s CSP, with no violation', async () => {
    const page = await fetch(`${gw.url}/docs`);
    expect(page.status).toBe(200);
    expect(page.headers.get('content-security-policy')).toBe(CONTENT_SECURITY_POLICY);
    expect(page.headers.get('x-frame-options')).toBe('DENY');
    const html = await page.text();
    // nothing from another origin, nothing inline
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(/<script>|<style|style=/);

    browser = await launchChromium();
    for (const width of [1280, 375, 320]) {
      const ctx = await browser.newContext({ viewport: { width, height: 900 } });
      const tab = await ctx.newPage();
      const problems: string[] = [];
      const requests: string[] = [];
      tab.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
      tab.on('console', (m) => {
        if (m.type() === 'error') problems.push(`console: ${m.text()}`);
      });
      tab.on('request', (r) => requests.push(r.url()));
      tab.on('response', (r) => {
        if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
      });
      // a listener the page's own scripts cannot remove: every violation of the policy is kept
      await tab.addInitScript(() => {
        const g = globalThis as unknown as PageGlobals;
        g.cspViolations = [];
        g.document.addEventListener('securitypolicyviolation', (e) =>
          g.cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`),
        );
      });
      await tab.goto(`${gw.url}/docs`);
      await tab.locator('.opblock').first().waitFor({ timeout: 30_000 });
      const rendered = await tab
        .locator('.opblock')
        .evaluateAll((els: Array<{ id: string }>) => els.map((e) => e.id.replace(/^operations-[^-]+-/, '')));
      expect(rendered.sort()).toEqual([...OPERATION_IDS].sort());
      expect(await tab.evaluate(() => (globalThis as unknown as PageGlobals).cspViolations)).toEqual([]);
      expect(problems).toEqual([]);
      expect(requests.filter((u) => !u.startsWith(gw.url) && !u.startsWith('data:'))).toEqual([]);
      // nothing wider than the screen
      const overflow = await tab.evaluate(() => {
        const g = globalThis as unknown as PageGlobals;
        return g.document.documentElement.scrollWidth - g.innerWidth;
      });
      expect({ width, overflow: overflow <= 0 }).toEqual({ width, overflow: true });
      await tab.screenshot({ path: path.join(SHOTS, `api-docs-${width}.png`), fullPage: false });
      if (width === 1280) {
        // one operation opened: its parameters and schemas show
        await tab.locator('#operations-sessions-listSessions .opblock-summary').click();
        await tab.getByText('per_page').first().waitFor();
        await tab.screenshot({ path: path.join(SHOTS, 'api-docs-1280-operation.png') });
      }
      expect({ width, axe: await seriousViolations(tab) }).toEqual({ width, axe: [] });
      await ctx.close();
    }
  });
});
