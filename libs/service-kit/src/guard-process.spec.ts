import type { Logger } from 'pino';
import { guardProcess } from './bootstrap';

describe('guardProcess', () => {
  it('logs an unhandled rejection and an uncaught exception by name, once however often it is called', () => {
    const before = {
      rejection: process.listeners('unhandledRejection'),
      monitor: process.listeners('uncaughtExceptionMonitor'),
    };
    const lines: Array<[string, unknown, string]> = [];
    const log = {
      error: (o: unknown, m: string) => lines.push(['error', o, m]),
      fatal: (o: unknown, m: string) => lines.push(['fatal', o, m]),
    } as unknown as Logger;
    try {
      guardProcess(log);
      guardProcess(log);
      const added = {
        rejection: process.listeners('unhandledRejection').filter((l) => !before.rejection.includes(l)),
        monitor: process.listeners('uncaughtExceptionMonitor').filter((l) => !before.monitor.includes(l)),
      };
      expect(added.rejection).toHaveLength(1);
      expect(added.monitor).toHaveLength(1);
      added.rejection[0](new RangeError('Maximum call stack size exceeded'), Promise.resolve());
      added.monitor[0](new Error('boom'), 'uncaughtException');
      expect(lines).toEqual([
        ['error', { err: 'Maximum call stack size exceeded' }, 'unhandled promise rejection'],
        ['fatal', { err: 'boom' }, 'uncaught exception'],
      ]);
    } finally {
      for (const l of process.listeners('unhandledRejection'))
        if (!before.rejection.includes(l)) process.off('unhandledRejection', l);
      for (const l of process.listeners('uncaughtExceptionMonitor'))
        if (!before.monitor.includes(l)) process.off('uncaughtExceptionMonitor', l);
    }
  });
});
