#!/usr/bin/env bash
# The whole test suite: unit and integration tests (in parallel, with agent-loop coverage), then the
# end-to-end tests one file at a time (each starts the five apps as processes). Ends with the line
# `N passed, N failed`.
set -uo pipefail
cd "$(dirname "$0")/.."

node scripts/check-services.js || exit 1
[ -d node_modules ] || npm ci --no-audit --no-fund || exit 1
echo "Building…"
npm run build || { echo "0 passed, 1 failed"; exit 1; }

export SKALD_TEST_SKIP_BUILD=1
mkdir -p test-results
rm -rf test-results/jest-*.json test-results/attack-suite-* test-results/lint.failed
echo "Linting…"
{ npm run --silent lint && npx tsc -p apps/web/tsconfig.json; } || touch test-results/lint.failed
# At least two workers: Jest's default (cores - 1) is one on a 2-core machine, and one worker runs
# every file in band, one after another, so a spec that sleeps (the scheduler's cron windows) holds
# up the CPU-bound ones. Timing-bound specs are *.serial-spec.ts, in the e2e phase.
workers=$(node -p 'Math.max(2, require("os").availableParallelism() - 1)')
# Jest's workers inherit the node options of its process. A 64 MiB young generation (V8's default semi-space is
# 16 MiB) spares most scavenges of the many short-lived objects fast-check and the module registry make: the unit
# project's CPU time fell by 15–18 % on 46 of its files (alternating runs).
jest=(node --max-semi-space-size=64 node_modules/jest/bin/jest.js)
"${jest[@]}" --selectProjects unit integration --maxWorkers="$workers" --coverage --forceExit --json --outputFile=test-results/jest-main.json "$@"
# The unit tier again on the Node LTS the images run (the major of deploy/Dockerfile's NODE_IMAGE), while the
# machine's node is the oldest the code supports (package.json `engines`): the code runs on both. That Node comes
# from the npm registry's `node` package (npx caches it after the first run). The unit tier runs no process, so
# what it checks is the code on that Node (the shell differential, which spends its time in dash and bash, is an
# integration test).
lts=$(sed -n 's/^ARG NODE_IMAGE=node:\([0-9][0-9]*\)-.*/\1/p' deploy/Dockerfile)
npx --yes -p "node@$lts" -- "${jest[@]}" --selectProjects unit --maxWorkers="$workers" \
  --passWithNoTests --forceExit --json \
  --outputFile=test-results/jest-unit-lts.json "$@"
npx jest --selectProjects e2e --runInBand --forceExit --json --outputFile=test-results/jest-e2e.json "$@"
# The escape suites again in the sandbox's other limits mode (per-sandbox rlimits, as where no cgroup is writable).
reports=(test-results/jest-main.json test-results/jest-unit-lts.json test-results/jest-e2e.json)
if [ "$#" -eq 0 ]; then
  SKALD_SANDBOX_CGROUPS=off "${jest[@]}" --selectProjects integration --maxWorkers="$workers" --forceExit --json \
    --outputFile=test-results/jest-rlimits.json --testPathPatterns 'sandbox-escape|mcp-escape'
  reports+=(test-results/jest-rlimits.json)
fi
node scripts/test-summary.js "${reports[@]}"
