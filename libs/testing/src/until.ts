const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Polls `fn` every 250 ms until it returns something truthy, and returns that; fails naming `what`
 * once `timeoutMs` has passed (the loop's bound).
 */
export async function until<T>(
  what: string,
  fn: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 60_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(250);
  }
}
