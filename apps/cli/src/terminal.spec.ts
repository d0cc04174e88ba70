import { drawLiveAtTerminal } from './terminal.ts';

describe('drawLiveAtTerminal', () => {
  const ci = () => ({ CI: 'true', CONTINUOUS_INTEGRATION: '1', PATH: '/bin' }) as Record<string, string | undefined>;

  it('at a terminal, the CI markers read as unset (Ink draws live frames)', () => {
    const env = ci();
    drawLiveAtTerminal(env, { stdinIsTTY: true, stdoutIsTTY: true });
    expect(env).toEqual({ CI: 'false', CONTINUOUS_INTEGRATION: 'false', PATH: '/bin' });
  });

  it('piped in or out, the environment stays as it is', () => {
    for (const io of [
      { stdinIsTTY: false, stdoutIsTTY: true },
      { stdinIsTTY: true, stdoutIsTTY: false },
      { stdinIsTTY: false, stdoutIsTTY: false },
    ]) {
      const env = ci();
      drawLiveAtTerminal(env, io);
      expect(env).toEqual(ci());
    }
  });

  it('adds no marker that was not there', () => {
    const env: Record<string, string | undefined> = { PATH: '/bin' };
    drawLiveAtTerminal(env, { stdinIsTTY: true, stdoutIsTTY: true });
    expect(env).toEqual({ PATH: '/bin' });
  });
});
