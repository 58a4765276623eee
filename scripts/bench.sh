#!/usr/bin/env bash
# Run the benchmarks on a fresh machine: sets up .venv (test + bench extras: jax, asdex, matplotlib) and
# clang, then bench/run.py from the repository root: tinyjax vs JAX vs hand-written tinygrad, the cases in bench/cases.py.
# A full run rewrites docs/benchmarks.md and docs/benchmarks.png; --quick is a short run into bench/out/.
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" "test,bench"
exec python -m bench.run "$@"
