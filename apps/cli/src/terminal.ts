/**
 * Ink draws its live frames only outside CI: it reads `CI` and `CONTINUOUS_INTEGRATION` once, when it
 * loads (the is-in-ci package), and in CI writes the last frame at exit alone. A person at a terminal
 * whose environment carries one of them (a dev container, a CI job's debug shell) would see the
 * transcript but never the input. So when both ends are a terminal, this process reads them as unset;
 * it must run before Ink loads (the commands that draw load it lazily).
 */
const CI_MARKERS = ['CI', 'CONTINUOUS_INTEGRATION'] as const;

export function drawLiveAtTerminal(
  env: Record<string, string | undefined>,
  io: { stdinIsTTY: boolean; stdoutIsTTY: boolean },
): void {
  if (!io.stdinIsTTY || !io.stdoutIsTTY) return;
  for (const key of CI_MARKERS) if (key in env) env[key] = 'false';
}
