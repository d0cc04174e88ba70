import { useEffect, type RefObject } from 'react';
import { loadHighlighter } from '../files/highlight';

/** Blocks longer than this stay plain (highlighting is for reading, not for megabytes of output). */
const HIGHLIGHT_MAX_CHARS = 100_000;
/** A streaming answer changes often: blocks are decorated once it has been still this long. */
const SETTLE_MS = 150;

/**
 * Decorates the code blocks of sanitised markdown in `ref`: highlighted by highlight.js (loaded on
 * first use; it reads the block's text and writes escaped spans, so nothing the model wrote becomes
 * markup) and given a Copy button. Runs again whenever `text` changes.
 */
export function useCodeBlocks(ref: RefObject<HTMLElement | null>, text: string): void {
  useEffect(() => {
    const root = ref.current;
    if (!root || !root.querySelector('pre > code')) return;
    let live = true;
    const timer = setTimeout(() => {
      void loadHighlighter().then((hljs) => {
        if (!live) return;
        for (const code of root.querySelectorAll<HTMLElement>('pre > code')) {
          const pre = code.parentElement!;
          if (pre.dataset.decorated) continue;
          pre.dataset.decorated = '1';
          // marked ends a block with a newline the author did not type
          const source = (code.textContent ?? '').replace(/\n$/, '');
          if (source.length <= HIGHLIGHT_MAX_CHARS) {
            code.innerHTML = hljs.highlightAuto(source).value;
            code.classList.add('hljs');
          }
          pre.classList.add('code-block');
          const copy = document.createElement('button');
          copy.type = 'button';
          copy.className = 'copy-code';
          copy.textContent = 'Copy';
          copy.setAttribute('aria-label', 'Copy code');
          copy.addEventListener('click', () => {
            void navigator.clipboard?.writeText(source).then(
              () => {
                copy.textContent = 'Copied';
                setTimeout(() => (copy.textContent = 'Copy'), 1500);
              },
              () => undefined,
            );
          });
          pre.append(copy);
        }
      });
    }, SETTLE_MS);
    return () => {
      live = false;
      clearTimeout(timer);
    };
  }, [ref, text]);
}
