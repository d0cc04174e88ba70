import { useCallback, useEffect, useReducer } from 'react';
import type { InboxDto } from '@skald/contracts';
import type { Api } from '../api';
import type { FrameHub } from '../conversations/frame-hub';
import { usePolling } from '../poll';
import { inboxCount, inboxCountReducer, noInbox } from './inbox-count';

/** How often the inbox is listed again (REST is the truth behind the user events). */
const LIST_EVERY_MS = 15_000;

interface BadgingNavigator {
  setAppBadge?: (n: number) => Promise<void>;
  clearAppBadge?: () => Promise<void>;
}

/**
 * The count of what waits for the user: listed by REST now, every 15 s and after each (re)connect,
 * moved on live by the chat socket's user events (`hub`). The installed app's icon shows it too
 * where the browser has the Badging API.
 */
export function useInboxCount(api: Api, hub: FrameHub): number {
  const [st, dispatch] = useReducer(inboxCountReducer, noInbox);
  const list = useCallback(() => {
    api.get<InboxDto>('/api/inbox').then(
      (inbox) => dispatch({ type: 'listed', inbox }),
      () => undefined,
    );
  }, [api]);
  usePolling(list, LIST_EVERY_MS);
  useEffect(
    () =>
      hub.subscribe((f) => {
        dispatch(f);
        if (f.type === 'hello') list();
      }),
    [hub, list],
  );
  const count = inboxCount(st);
  useEffect(() => {
    const nav = navigator as Navigator & BadgingNavigator;
    const done = count > 0 ? nav.setAppBadge?.(count) : nav.clearAppBadge?.();
    done?.catch(() => undefined);
  }, [count]);
  return count;
}
