#!/usr/bin/env bash
# Builds the Node package in place (napi-rs, into the workspace's target/release/ beside the rest
# of the workspace: see scripts/host-cargo.sh) and runs its tests with node's own test runner.
# Needs node >= 18 and npm.
set -euo pipefail
cd "$(dirname "$0")"
[ -d node_modules/@napi-rs/cli ] || npm ci --no-audit --no-fund --loglevel=error
npm run --silent build
npm test
