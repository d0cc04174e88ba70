'use strict';
// Generated sections of a markdown page, between a BEGIN and an END marker (docs/operations.md has two).

/** `markdown` with the section between `begin` and `end` (markers included) replaced by `section`. */
function replaceSection(markdown, begin, end, section) {
  const start = markdown.indexOf(begin);
  const stop = markdown.indexOf(end);
  if (start < 0 || stop < start) throw new Error(`the page has no "${begin}" … "${end}" section`);
  return markdown.slice(0, start) + section + markdown.slice(stop + end.length);
}

module.exports = { replaceSection };
