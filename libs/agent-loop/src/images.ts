/**
 * Images in a request. The projection refers to workspace images (`image_ref` parts: image
 * attachments, `read_file` results); right before each model call they become what that client
 * takes: for a client that can see images, the newest `maxImages` become `image_url` parts (data
 * URLs the `ImagePort` made, resized and re-encoded to its limits) and older ones a marker; for a
 * client without vision (or no `ImagePort`) they are left out, so it gets exactly the text it got
 * before images existed (the attachment block, the tool result's description).
 */
import type { ImagePort, LlmClientDescriptor, LoadedImage } from './ports';
import { imageNotShown, imageOverCount } from './texts';
import type { Attachment, WireImageRef, WireMessage, WireUserPart } from './types';

/** The image types a vision client is given (a GIF as its first frame). */
export const IMAGE_MIME_TYPES: readonly string[] = ['image/png', 'image/jpeg', 'image/webp', 'image/gif'];
const IMAGE_EXTENSION = /\.(png|jpe?g|webp|gif)$/i;

/** An attachment offered to a vision client as an image (the service behind `ImagePort` checks the bytes). */
export function isImageAttachment(a: Attachment): boolean {
  return (
    (a.mimetype !== undefined && IMAGE_MIME_TYPES.includes(a.mimetype.toLowerCase())) || IMAGE_EXTENSION.test(a.path)
  );
}

/** The image references of messages, in order. */
export function imageRefs(messages: readonly WireMessage[]): WireImageRef[] {
  const refs: WireImageRef[] = [];
  for (const m of messages) {
    if (m.role !== 'user' || typeof m.content === 'string') continue;
    for (const p of m.content) if (p.type === 'image_ref') refs.push(p);
  }
  return refs;
}

/**
 * `messages` as `client` takes them (see the module's comment). Loads each image kept once, one
 * at a time (at most `maxImages`); a failed load becomes a marker naming why. A user message left
 * with one text part becomes plain text; one left with nothing (the images of a tool result, for a
 * client without vision) is dropped.
 */
export async function fitImages(
  messages: WireMessage[],
  client: LlmClientDescriptor,
  port: ImagePort | undefined,
  userId: string,
  signal: AbortSignal,
): Promise<WireMessage[]> {
  const refs = imageRefs(messages);
  if (refs.length === 0) return messages;
  const vision = port && client.vision ? client.vision : null;
  const firstKept = vision ? Math.max(0, refs.length - vision.maxImages) : refs.length;
  const loaded = new Map<string, LoadedImage>();
  if (port && vision) {
    for (const ref of refs.slice(firstKept)) {
      if (loaded.has(ref.path)) continue;
      loaded.set(ref.path, await port.load({ userId, path: ref.path, limits: vision }, signal));
    }
  }
  let index = 0;
  const out: WireMessage[] = [];
  for (const m of messages) {
    if (m.role !== 'user' || typeof m.content === 'string') {
      out.push(m);
      continue;
    }
    const parts: WireUserPart[] = [];
    for (const p of m.content) {
      if (p.type !== 'image_ref') {
        parts.push(p);
        continue;
      }
      const at = index++;
      if (!vision) continue;
      if (at < firstKept) {
        parts.push({ type: 'text', text: imageOverCount(p.path, vision.maxImages) });
        continue;
      }
      const image = loaded.get(p.path) as LoadedImage;
      if (!image.ok) {
        parts.push({ type: 'text', text: imageNotShown(p.path, image.reason) });
        continue;
      }
      if (p.label) parts.push({ type: 'text', text: p.label });
      parts.push({ type: 'image_url', image_url: { url: image.dataUrl } });
    }
    if (parts.length === 0) continue;
    const only = parts[0];
    if (parts.length === 1 && only.type === 'text' && !only.cache_control)
      out.push({ role: 'user', content: only.text });
    else out.push({ role: 'user', content: parts });
  }
  return out;
}
