#!/usr/bin/env bash
# A long differential fuzzing campaign: N random programs (default 2000) under random stacks of tinyjax transforms, each
# compared with JAX (tests/fuzzer.py). Prints a summary of the failures by signature, then a shrunk standalone
# reproducer for each distinct one. The seed is today's date (tests/fuzzer.py's default; --seed S or TINYJAX_FUZZ_SEED
# picks another): each day's campaign tries new programs, while the test suite (tests/test_fuzz.py) keeps a fixed seed.
# Further options go to tests/fuzzer.py:
#   bash scripts/fuzz.sh 5000 --seed 7 --jobs 2      # --shrink SECONDS, --timeout SECONDS, -v: a line per program
source "$(dirname "${BASH_SOURCE[0]}")/setup.sh" test
N="${1:-2000}"
if [ $# -gt 0 ]; then shift; fi
exec python tests/fuzzer.py --count "$N" "$@"
