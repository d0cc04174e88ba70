import type { Frame } from '../socket';

/** The chat socket's frames, for the parts of the screen beside the chat (sidebar, model picker). */
export class FrameHub {
  private readonly listeners = new Set<(f: Frame) => void>();

  readonly subscribe = (on: (f: Frame) => void): (() => void) => {
    this.listeners.add(on);
    return () => this.listeners.delete(on);
  };

  emit(f: Frame): void {
    for (const on of this.listeners) on(f);
  }
}
