/** The JSON log lines of an app's process (what the stack collected from its stdout and stderr); other lines left out. */
export function jsonLines(proc: { logs: string[] }): Array<Record<string, unknown>> {
  return proc.logs.flatMap((l): Array<Record<string, unknown>> => {
    try {
      return [JSON.parse(l) as Record<string, unknown>];
    } catch {
      return [];
    }
  });
}
