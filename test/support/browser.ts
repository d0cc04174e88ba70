import { readFileSync } from 'node:fs';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { ROOT } from './db';

/** Debian's chromium, driven by playwright-core (no downloaded browser). */
export const CHROMIUM = process.env.SKALD_CHROMIUM ?? '/usr/bin/chromium';
export const SHOTS = path.join(ROOT, 'test-results/screenshots');
/** What a closed network needs: no background traffic Chromium would otherwise attempt. */
const FLAGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--disable-dev-shm-usage',
];

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM, headless: true, args: FLAGS });
}

export const DESKTOP = { width: 1280, height: 900 };
export const PHONE = { width: 375, height: 740 };

/** Signs in through the login form and waits for the chat's socket. */
export async function signIn(page: Page, baseUrl: string, email: string, password: string): Promise<void> {
  await page.goto(baseUrl);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password').fill(password);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.getByText('connected', { exact: true }).waitFor();
}

/** A screenshot named after its screen, in test-results/screenshots/. */
export function shot(page: Page, screen: string): Promise<Buffer> {
  return page.screenshot({ path: path.join(SHOTS, `${screen}.png`) });
}

interface AxeGlobal {
  axe: {
    run(): Promise<{ violations: Array<{ id: string; impact: string; nodes: Array<{ target: string[] }> }> }>;
  };
}

let axeSource: string | null = null;

/**
 * axe-core on the page as it is (evaluated through the debugging protocol, which the page's CSP
 * does not govern, so the page keeps its real policy): serious and critical violations, by rule.
 */
export async function seriousViolations(page: Page): Promise<string[]> {
  axeSource ??= readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');
  await page.evaluate(`${axeSource}\n;undefined`);
  return page.evaluate(async () => {
    const axe = (globalThis as unknown as AxeGlobal).axe;
    const r = await axe.run();
    return r.violations
      .filter((v) => v.impact === 'serious' || v.impact === 'critical')
      .map((v) => `${v.id}: ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`);
  });
}
