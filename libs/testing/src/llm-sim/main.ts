/**
 * llm-sim as its own OS process.
 *
 *   PORT=4010 HOST=127.0.0.1 LLM_SIM_FIRST_BYTE_MS=0 LLM_SIM_CHUNK_DELAY_MS=0 LLM_SIM_API_KEY= node main.js
 *
 * Prints one JSON line `{"event":"listening","url":"http://127.0.0.1:4010/v1","adminUrl":…,"port":…}`
 * once it accepts connections; SIGTERM / SIGINT close it and exit 0.
 */
import { startLlmSim } from './sim-server';

function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0) {
    throw new Error(`${name} must be a number ≥ 0, got ${JSON.stringify(raw)}`);
  }
  return value;
}

async function main(): Promise<void> {
  const port = envNumber('PORT', 4010);
  const sim = await startLlmSim({
    port,
    host: process.env.HOST || '127.0.0.1',
    apiKey: process.env.LLM_SIM_API_KEY || undefined,
    latency: {
      firstByteMs: envNumber('LLM_SIM_FIRST_BYTE_MS', 0),
      betweenChunksMs: envNumber('LLM_SIM_CHUNK_DELAY_MS', 0),
    },
  });
  process.stdout.write(
    `${JSON.stringify({ event: 'listening', url: sim.url, adminUrl: sim.adminUrl, port: sim.port })}\n`,
  );
  let closing = false;
  const stop = (signal: NodeJS.Signals): void => {
    if (closing) return;
    closing = true;
    sim.close().then(
      () => {
        process.stdout.write(`${JSON.stringify({ event: 'closed', signal })}\n`);
        process.exit(0);
      },
      (err: unknown) => {
        process.stderr.write(`${JSON.stringify({ event: 'close_failed', error: String(err) })}\n`);
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}

main().catch((err: unknown) => {
  process.stderr.write(
    `${JSON.stringify({ event: 'start_failed', error: err instanceof Error ? err.message : String(err) })}\n`,
  );
  process.exit(1);
});
