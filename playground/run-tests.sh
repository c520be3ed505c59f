#!/usr/bin/env bash
# Browser tests of the playground page that `nucleus serve` serves at `/`: Debian's chromium
# (apt-get install chromium; .ci/run installs it) driven by playwright-core, headless, against
# a real server on the default model (SmolLM2, one thread). Builds the nucleus binary if needed.
# UPDATE_SCREENSHOTS=1 writes the screenshots into docs/ (else into target/playground-screenshots/).
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x "${CHROMIUM:-/usr/bin/chromium}" ]; then
    echo "playground tests need Debian's chromium at /usr/bin/chromium: apt-get install chromium" >&2
    exit 1
fi
[ -d node_modules/playwright-core ] || npm ci --no-audit --no-fund --loglevel=error
(cd .. && cargo build --release -p nucleus --quiet)
npm test
