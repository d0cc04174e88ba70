import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export interface ReadableText {
  title: string;
  markdown: string;
}

/** Elements whose content is never text a reader wants. */
const DROPPED = ['script', 'style', 'noscript', 'template', 'iframe', 'object', 'embed', 'svg', 'canvas', 'form'];

/**
 * A page's readable text as Markdown: Mozilla's Readability (Firefox's reader view) finds the
 * main content in a linkedom DOM, turndown writes it as Markdown. A page Readability finds no
 * article in gives its whole body. Links are made absolute against `url`.
 */
export function htmlToMarkdown(html: string, url: string): ReadableText {
  const { document } = parseHTML(html);
  const head = document.head ?? document.documentElement;
  if (head && !document.querySelector('base[href]')) {
    const base = document.createElement('base');
    base.setAttribute('href', url);
    head.appendChild(base);
  }
  const title = (document.querySelector('title')?.textContent ?? '').trim();
  for (const tag of DROPPED) for (const el of [...document.querySelectorAll(tag)]) el.remove();
  // Readability changes the document it reads: it reads a clone so the fallback still has the body.
  const article = new Readability(document.cloneNode(true) as unknown as ConstructorParameters<typeof Readability>[0], {
    charThreshold: 200,
  }).parse();
  const content = article?.content ?? document.body?.innerHTML ?? html;
  const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  turndown.remove(DROPPED as TurndownService.Filter);
  const markdown = turndown
    .turndown(content)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title: article?.title?.trim() || title, markdown };
}
