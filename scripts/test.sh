#!/usr/bin/env bash
# Run the test suite on a fresh machine: sets up .venv (with the test extra) and clang, then pytest.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" test
exec python -m pytest -n 2 -q "$@"
