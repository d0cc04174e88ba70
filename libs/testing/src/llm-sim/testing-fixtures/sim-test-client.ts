import OpenAI from 'openai';
import type { LlmSim } from '../sim-server';

/** The real `openai` client pointed at a sim, without the SDK's own retries unless asked. */
export function openAiFor(
  sim: LlmSim,
  options: { maxRetries?: number; timeout?: number; apiKey?: string } = {},
): OpenAI {
  return new OpenAI({
    baseURL: sim.url,
    apiKey: options.apiKey ?? 'sk-sim-test',
    maxRetries: options.maxRetries ?? 0,
    timeout: options.timeout ?? 5000,
  });
}

/** A unique marker per test, so scripts of concurrent tests never answer each other. */
export function marker(name: string): string {
  return `[[${name}-${Math.random().toString(36).slice(2, 10)}]]`;
}
