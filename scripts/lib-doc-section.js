'use strict';
// Generated sections of a markdown page, between a BEGIN and an END marker (docs/operations.md has two), and the
// page formatted the way `prettier --check` wants it.

const prettier = require('@prettier/sync');

/**
 * `markdown` with the section between `begin` and `end` (markers included) replaced by `section`.
 * @param {string} markdown
 * @param {string} begin
 * @param {string} end
 * @param {string} section
 */
function replaceSection(markdown, begin, end, section) {
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`the page has no "${begin}" … "${end}" section`);
  return markdown.slice(0, start) + section + markdown.slice(stop + end.length);
}

/**
 * `text` formatted by Prettier with the repository's settings for `filepath`. Synchronous (Prettier's API in a
 * worker thread), so the generators and the specs that compare a page with them stay plain functions.
 * @param {string} text
 * @param {string} filepath
 * @returns {string}
 */
function formatWithPrettier(text, filepath) {
  const options = prettier.resolveConfig(filepath) ?? {};
  return prettier.format(text, { ...options, filepath });
}

module.exports = { replaceSection, formatWithPrettier };
