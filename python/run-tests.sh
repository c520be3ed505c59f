#!/usr/bin/env bash
# Builds and installs the Python package from this checkout (maturin, through pip, into the
# workspace's target directory), then runs its tests. Needs python3 >= 3.11 with pip; numpy and
# pytest are installed if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -c 'import numpy, pytest' 2>/dev/null || python3 -m pip install -q --root-user-action=ignore numpy pytest
python3 -m pip install -q --root-user-action=ignore --force-reinstall --no-deps ./python
python3 -m pytest -q -p no:cacheprovider python/tests
