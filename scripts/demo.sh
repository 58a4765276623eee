#!/usr/bin/env bash
# Run the demo on a fresh machine: sets up .venv and clang, then examples/demo.py.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
exec python examples/demo.py "$@"
