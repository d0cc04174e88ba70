import { readServerFrame } from '@skald/contracts/server-frame';
import { chatReducer, initialChat, type ChatFrame, type ChatState, type HistoryFrame } from '../chat-state';

/** A frame as a spec writes it: the JSON the server sends (or a REST history page), not yet read. */
export type RawFrame = { type: string } & Record<string, unknown>;

/**
 * A spec's frame as the chat reducer gets it: a history page as it is, a server frame through the
 * socket's reader (a frame the client would drop fails the spec).
 */
export function chatFrame(raw: RawFrame): ChatFrame {
  if (raw.type === 'history' || raw.type === 'history_older') return raw as unknown as HistoryFrame;
  const f = readServerFrame(raw);
  if (!f) throw new Error(`the client drops ${JSON.stringify(raw)}`);
  return f;
}

/** Frames folded by the chat reducer, as the screen folds them. */
export const foldFrames = (frames: RawFrame[], from: ChatState = initialChat): ChatState =>
  frames.map(chatFrame).reduce(chatReducer, from);
