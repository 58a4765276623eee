#!/usr/bin/env bash
# Run the test suite on a fresh machine: sets up .venv (with the test extra) and clang, then the lints (ruff, mypy), the
# docs build (mkdocs --strict) and pytest: every test (CI runs this). Arguments go to pytest.
#   bash scripts/test.sh --fast     # the fast tier instead: ruff, mypy and `pytest -m fast` (~70 s on 2 cores with
#                                   # warm caches; tests/conftest.py lists its tests), no docs build
FAST=0
if [ "${1:-}" = "--fast" ]; then FAST=1; shift; fi
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" test
echo "tinyjax: ruff" && ruff check .
echo "tinyjax: mypy" && mypy
if [ "$FAST" = 1 ]; then exec python -m pytest -n 2 --dist worksteal -q -m fast "$@"; fi
# the docs site (pages and the API reference from the docstrings), built outside the repository
# (its log is shown only on failure: mkdocs --quiet would also hide the warnings that --strict fails on)
DOCS_SITE="$(mktemp -d)"
echo "tinyjax: mkdocs"
if ! DOCS_LOG="$(mkdocs build --strict --site-dir "$DOCS_SITE" 2>&1)"; then echo "$DOCS_LOG" >&2; rm -rf "$DOCS_SITE"; exit 1; fi
rm -rf "$DOCS_SITE"
exec python -m pytest -n 2 --dist worksteal -q "$@"
