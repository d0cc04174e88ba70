import { useEffect } from 'react';

/** Calls `load` now and every `ms` while the screen is shown (REST is the truth behind the events). */
export function usePolling(load: () => void, ms: number): void {
  useEffect(() => {
    load();
    const t = setInterval(load, ms);
    return () => clearInterval(t);
  }, [load, ms]);
}
