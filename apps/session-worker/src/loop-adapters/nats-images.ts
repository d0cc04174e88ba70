import type { ImagePort, LoadedImage, VisionLimits } from '@skald/agent-loop';
import { imageResultPath, type Role } from '@skald/contracts';
import { Bus } from '@skald/messaging/bus-port';

/** How long one image may take on the tool runner (read, decode, fit, encode). */
const IMAGE_TIMEOUT_MS = 30_000;

/**
 * The loop's images on the tool runner (`tools.image`): the runner reads the user's workspace
 * image through its jail and fits it to the client's limits with sharp (the worker never decodes
 * an image). History rows keep only paths: the bytes are made again for each request from the
 * file, out of the runner's bounded cache of fitted images (keyed by the file's size and
 * modification time), so nothing but a path is ever stored in a chat row. A runner that does not
 * answer leaves the image out with a marker naming why; the turn goes on.
 */
export class NatsImages implements ImagePort {
  constructor(
    private readonly bus: Bus,
    private readonly role: Role,
  ) {}

  resultImage(call: { status: string; resultType: string | null; result: string | null }): string | null {
    return call.status === 'done' ? imageResultPath(call.resultType, call.result) : null;
  }

  async load(
    request: { userId: string; path: string; limits: VisionLimits },
    signal: AbortSignal,
  ): Promise<LoadedImage> {
    try {
      const reply = await this.bus.call(
        'tools.image',
        {
          actor: { userId: request.userId, role: this.role },
          path: request.path,
          max_side: request.limits.maxSide,
          max_bytes: request.limits.maxBytes,
        },
        { timeoutMs: IMAGE_TIMEOUT_MS, signal },
      );
      if (!reply.ok) return reply;
      return {
        ok: true,
        dataUrl: `data:${reply.mime};base64,${reply.data}`,
        width: reply.width,
        height: reply.height,
        bytes: Math.floor((reply.data.length * 3) / 4),
      };
    } catch {
      return { ok: false, reason: 'the tool runner did not make it ready in time' };
    }
  }
}
