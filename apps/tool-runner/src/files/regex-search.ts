import { Injectable } from '@nestjs/common';
import { Worker } from 'node:worker_threads';
import { ToolError } from '../tool-error';

/**
 * Runs a model-supplied regular expression over texts in a worker thread with a deadline: JavaScript
 * regexes can backtrack for hours, and one pathological pattern must not stall every user's calls.
 * Returns, per text, the 0-based indexes of matching lines (a trailing `\r` is not part of a line).
 */
@Injectable()
export class RegexSearch {
  /** Deadline of one search. */
  timeoutMs = 10_000;

  async matchingLines(pattern: string, caseSensitive: boolean, texts: string[]): Promise<number[][]> {
    const flags = caseSensitive ? '' : 'i';
    try {
      new RegExp(pattern, flags);
    } catch (e) {
      throw new ToolError('invalid_argument', `grep_files: invalid regular expression: ${(e as Error).message}`);
    }
    if (texts.length === 0) return [];
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { pattern, flags, texts } });
    return new Promise<number[][]>((resolve, reject) => {
      const timer = setTimeout(() => {
        void worker.terminate();
        reject(
          new ToolError(
            'too_large',
            `grep_files: the search took longer than ${this.timeoutMs / 1000} s and was stopped; use a simpler pattern or a narrower path or glob`,
          ),
        );
      }, this.timeoutMs);
      worker.once('message', (m: number[][]) => {
        clearTimeout(timer);
        resolve(m);
        void worker.terminate();
      });
      worker.once('error', (e) => {
        clearTimeout(timer);
        reject(new ToolError('io', `grep_files: search failed: ${e.message}`));
      });
    });
  }
}

const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const re = new RegExp(workerData.pattern, workerData.flags);
parentPort.postMessage(workerData.texts.map((text) => {
  const lines = text.split('\\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const hits = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].endsWith('\\r') ? lines[i].slice(0, -1) : lines[i];
    if (re.test(line)) hits.push(i);
  }
  return hits;
}));
`;
