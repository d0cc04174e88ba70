import { existsSync, mkdirSync } from 'node:fs';
import type { Browser } from 'playwright-core';
import { DataSource } from 'typeorm';
import { ApiClient, LlmSimAdminClient, Stack, type StackOptions } from '@skald/testing';
import { CHROMIUM, launchChromium, SHOTS } from './browser';
import { ROOT, testDb } from './db';
import { assertInvariantsAndClose } from './invariants';

/** What a browser spec works with: the five apps and llm-sim, the admin's API client, the test database, Chromium. */
export interface WebStack {
  stack: Stack;
  sim: LlmSimAdminClient;
  admin: ApiClient;
  db: DataSource;
  browser: Browser;
}

/** Starts a browser spec's world (`options` as `Stack.start`'s, the root given); screenshots go to `SHOTS`. */
export async function startWebStack(options: Omit<StackOptions, 'root'> = {}): Promise<WebStack> {
  expect(existsSync(CHROMIUM)).toBe(true);
  mkdirSync(SHOTS, { recursive: true });
  const stack = await Stack.start({ root: ROOT, ...options });
  let db: DataSource | undefined;
  try {
    const sim = new LlmSimAdminClient(stack.simUrl);
    const admin = await ApiClient.login(stack.gatewayUrl, stack.admin.email, stack.admin.password);
    db = await testDb();
    const browser = await launchChromium();
    return { stack, sim, admin, db, browser };
  } catch (e) {
    // Half started: stop what did start, so the spec's failure is the only thing left behind.
    await stack.stop();
    await db?.destroy();
    throw e;
  }
}

/** Stops what `startWebStack` started (whatever of it did start), then checks the invariants on the database. */
export async function stopWebStack(w: Partial<WebStack>): Promise<void> {
  await w.browser?.close();
  await w.stack?.stop();
  if (w.db) await assertInvariantsAndClose(w.db);
}
