"""The differential fuzzer (tests/fuzzer.py) on a bounded slice: 100 random tinygrad programs under random stacks of
tinyjax transforms, each compared with JAX running the same program through the same transforms.

The seed is fixed (SEED; TINYJAX_FUZZ_SEED overrides it), so the suite's result depends only on the code: CI is
reproducible, and a red run is the change's doing, not the day's. New programs are searched by scripts/fuzz.sh N, whose
seed is today's date: a long campaign every day. A failing chunk prints the seed, its failing cases, the command that
reruns them and a shrunk standalone reproducer per distinct failure (TINYJAX_FUZZ_SHRINK: seconds per chunk to spend
shrinking, 0 turns it off).
"""
import os
import pytest
from tinygrad.helpers import Context

import fuzzer

# a fixed seed: the same 100 programs in every run of the suite (CI), so its result depends only on the code; a program
# this seed never draws is scripts/fuzz.sh's to find (today's date as its seed: new programs each day)
SEED = int(os.environ.get("TINYJAX_FUZZ_SEED") or 20261127)
# 100 in the suite (~35 s of kernels to compile on 2 cores)
PROGRAMS, CHUNK = int(os.environ.get("TINYJAX_FUZZ_PROGRAMS", "100")), 20
SHRINK = float(os.environ.get("TINYJAX_FUZZ_SHRINK", "60"))


@pytest.fixture(autouse=True)
def _compile_in_process():
  """Compile kernels in this process (tinygrad's compile worker pool costs more than it saves on small graphs), with
  tinygrad's kernel optimizations on, as a user runs them."""
  with Context(PARALLEL=0, NOOPT=0): yield


@pytest.mark.parametrize("start", range(0, PROGRAMS, CHUNK))
def test_fuzz(start):
  fails = fuzzer.run_range(SEED, start, min(CHUNK, PROGRAMS - start))
  if not fails: return
  cases = ",".join(str(c.index) for c, _ in fails)
  head = (f"fuzz seed {SEED}: {len(fails)} of programs {start}..{start + CHUNK - 1} fail: cases {cases}\n"
          f"rerun: python tests/fuzzer.py --seed {SEED} --cases {cases}\n"
          + "".join(f"  case {c.index}: {o.kind} {o.sig}\n" for c, o in fails))
  shrunk = fuzzer.shrink_distinct(fails, SHRINK) if SHRINK > 0 else [(c, o, False, 1) for c, o in fails]
  pytest.fail(head + "\n" + "\n".join(f"[seed {SEED}] {fuzzer.report(c, o, plain)}" for c, o, plain, _ in shrunk), pytrace=False)
