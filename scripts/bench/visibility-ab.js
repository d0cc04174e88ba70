'use strict';
// In-process A/B of `approval.visible_tools`' rule work: a worker's question (every built-in tool,
// one agent, one source per conversation) answered by the rule engine of another build (A, e.g.
// main's dist) and of this one (B), alternating, CPU µs per question (process.cpuUsage).
//
//   node scripts/bench/visibility-ab.js <root of build A> [--rounds 20] [--questions 20000]
const path = require('node:path');

const ROOT = path.resolve(__dirname, '../..');
const arg = (name, dflt) => {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 ? Number(process.argv[i + 1]) : dflt;
};
const OLD = path.resolve(process.argv[2] ?? '/work/main');
const ROUNDS = arg('rounds', 20);
const QUESTIONS = arg('questions', 20000);

const { BUILTIN_TOOLS } = require(path.join(ROOT, 'libs/contracts/dist'));
const { DEFAULT_APPROVAL_RULES } = require(path.join(ROOT, 'libs/persistence/dist'));
/**
 * The rule engine of a build with its `RuleSet` (in rules/rule-set.js; a build without that file
 * has it in rules/rule-engine.js).
 * @param {string} root
 */
function engineOf(root) {
  const rules = path.join(root, 'apps/approval-service/dist/rules');
  const engine = require(path.join(rules, 'rule-engine'));
  return engine.RuleSet ? engine : { ...engine, RuleSet: require(path.join(rules, 'rule-set')).RuleSet };
}
const engines = { A: engineOf(OLD), B: engineOf(ROOT) };
const rows = DEFAULT_APPROVAL_RULES.map((r, i) => ({
  id: r.id,
  toolPattern: r.tool_pattern,
  pathPattern: r.path_pattern ?? null,
  commandPattern: null,
  agentId: null,
  source: null,
  securityGroup: null,
  action: r.action,
  priority: r.priority,
  ord: i + 1,
}));
const tools = [...BUILTIN_TOOLS.map((t) => t.name), 'mcp__github__create_issue', 'mcp__github__list_prs'];
// what GateService.visibleTools did (A) and does (B) with one request
const ask = {
  A: (e, set, ctx) => tools.filter((t) => e.isVisible(set, t, ctx)),
  B: (e, set, ctx) => e.visibleTools(set, tools, ctx),
};
const sets = { A: new engines.A.RuleSet(rows), B: new engines.B.RuleSet(rows) };
const contexts = Array.from({ length: 50 }, (_, i) => ({ agentId: 'main', source: `b${i}` }));
const same =
  JSON.stringify(ask.A(engines.A, sets.A, contexts[0])) === JSON.stringify(ask.B(engines.B, sets.B, contexts[0]));
if (!same) throw new Error('A and B answer differently');

const samples = { A: [], B: [] };
for (let r = 0; r < ROUNDS; r++) {
  for (const k of r % 2 ? ['B', 'A'] : ['A', 'B']) {
    const e = engines[k];
    const set = sets[k];
    const start = process.cpuUsage();
    for (let q = 0; q < QUESTIONS; q++) ask[k](e, set, contexts[q % contexts.length]);
    const used = process.cpuUsage(start);
    samples[k].push((used.user + used.system) / QUESTIONS);
  }
}
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
console.log(
  `visible_tools of ${tools.length} tools, ${rows.length} rules, 50 sources: ` +
    `A ${median(samples.A).toFixed(2)} µs, B ${median(samples.B).toFixed(2)} µs per question (median of ${ROUNDS})`,
);
