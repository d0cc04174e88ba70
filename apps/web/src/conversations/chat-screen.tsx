import { useEffect, useMemo, useState } from 'react';
import type { Api } from '../api';
import { Chat } from '../chat';
import { FrameHub } from './frame-hub';
import { ConversationSidebar } from './sidebar';

/** The chat with the sidebar of the source's conversations beside it (above it on a phone). */
export function ChatScreen({ api, source, hub: shared }: { api: Api; source: string; hub?: FrameHub }) {
  const own = useMemo(() => new FrameHub(), []);
  // the page's hub when it has one: the top bar follows the socket's user events too
  const hub = shared ?? own;
  const [activeId, setActiveId] = useState<string | null>(null);
  useEffect(
    () =>
      hub.subscribe((f) => {
        if (f.type === 'hello' || f.type === 'new_session') setActiveId(f.session_id);
      }),
    [hub],
  );
  return (
    <div className="chat-layout">
      <ConversationSidebar api={api} source={source} activeId={activeId} subscribe={hub.subscribe} />
      <Chat api={api} source={source} hub={hub} />
    </div>
  );
}
