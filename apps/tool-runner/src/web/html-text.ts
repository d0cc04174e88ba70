import { Readability } from '@mozilla/readability';
import { parseHTML } from 'linkedom';
import TurndownService from 'turndown';

export interface ReadableText {
  title: string;
  markdown: string;
}

/** What this module uses of linkedom's DOM (its typings lean on the DOM library, which the runner does not load). */
interface DomElement {
  textContent: string | null;
  innerHTML: string;
  remove(): void;
  setAttribute(name: string, value: string): void;
  appendChild(child: DomElement): void;
}
interface DomDocument {
  head: DomElement | null;
  documentElement: DomElement | null;
  body: DomElement | null;
  querySelector(selector: string): DomElement | null;
  querySelectorAll(selector: string): Iterable<DomElement>;
  createElement(tag: string): DomElement;
  cloneNode(deep: boolean): unknown;
}
/** Readability as this module calls it (its typings take a DOM `Document`). */
type ReadabilityReader = new (
  doc: unknown,
  options: { charThreshold: number },
) => { parse(): { title?: string | null; content?: string | null } | null };
const Reader = Readability as unknown as ReadabilityReader;

/** Elements whose content is never text a reader wants. */
const DROPPED = ['script', 'style', 'noscript', 'template', 'iframe', 'object', 'embed', 'svg', 'canvas', 'form'];

/**
 * A page's readable text as Markdown: Mozilla's Readability (Firefox's reader view) finds the
 * main content in a linkedom DOM, turndown writes it as Markdown. A page Readability finds no
 * article in gives its whole body. Links are made absolute against `url`.
 */
export function htmlToMarkdown(html: string, url: string): ReadableText {
  const { document } = parseHTML(html) as unknown as { document: DomDocument };
  const head = document.head ?? document.documentElement;
  if (head && !document.querySelector('base[href]')) {
    const base = document.createElement('base');
    base.setAttribute('href', url);
    head.appendChild(base);
  }
  const title = (document.querySelector('title')?.textContent ?? '').trim();
  for (const tag of DROPPED) for (const el of [...document.querySelectorAll(tag)]) el.remove();
  // Readability changes the document it reads: it reads a clone so the fallback still has the body.
  const article = new Reader(document.cloneNode(true), { charThreshold: 200 }).parse();
  const content = article?.content ?? document.body?.innerHTML ?? html;
  const turndown = new TurndownService({ headingStyle: 'atx', codeBlockStyle: 'fenced', bulletListMarker: '-' });
  turndown.remove(DROPPED as TurndownService.Filter);
  const markdown = turndown
    .turndown(content)
    .replace(/\n{3,}/g, '\n\n')
    .trim();
  return { title: article?.title?.trim() || title, markdown };
}
