import type { ServerFrame } from '@skald/contracts';

/** The chat socket's frames, for the parts of the screen beside the chat (sidebar, model picker). */
export class FrameHub {
  private readonly listeners = new Set<(f: ServerFrame) => void>();

  readonly subscribe = (on: (f: ServerFrame) => void): (() => void) => {
    this.listeners.add(on);
    return () => this.listeners.delete(on);
  };

  emit(f: ServerFrame): void {
    for (const on of this.listeners) on(f);
  }
}
