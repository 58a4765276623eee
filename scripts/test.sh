#!/usr/bin/env bash
# Run the test suite on a fresh machine: sets up .venv (with the test extra) and clang, then the lints (ruff, mypy) and
# pytest. Arguments go to pytest.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" test
echo "tinyjax: ruff" && ruff check .
echo "tinyjax: mypy" && mypy
exec python -m pytest -n 2 -q "$@"
