# Sourced by scripts/demo.sh and scripts/test.sh: make a fresh machine ready, or stop with a clear message.
#   - a virtual environment in .venv with tinyjax installed (editable) and the given extras
#   - clang, which tinygrad's CPU device compiles kernels with
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EXTRAS="${1:-}"
PY="${PYTHON:-python3}"

if ! command -v "$PY" >/dev/null 2>&1; then echo "tinyjax: $PY not found; install Python >= 3.11" >&2; exit 1; fi
if ! "$PY" -c 'import sys; sys.exit(sys.version_info < (3, 11))'; then
  echo "tinyjax: Python >= 3.11 is needed, $PY is $("$PY" -V 2>&1)" >&2; exit 1
fi

if ! command -v clang >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tinyjax: installing clang (tinygrad's CPU device needs it) ..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang >/dev/null
  else
    echo "tinyjax: tinygrad's CPU device needs clang, which is not installed. Install it (Debian/Ubuntu: sudo apt-get install -y clang) and run this again." >&2
    exit 1
  fi
fi

# the test and bench extras build cyipopt (source only) against Debian's IPOPT: its headers, LAPACK/BLAS and pkg-config
if [[ ",$EXTRAS," == *,test,* || ",$EXTRAS," == *,bench,* ]] && ! pkg-config --exists ipopt 2>/dev/null; then
  IPOPT_PKGS="coinor-libipopt-dev liblapack-dev libblas-dev pkg-config"
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "tinyjax: installing IPOPT for cyipopt ($IPOPT_PKGS) ..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $IPOPT_PKGS >/dev/null
  else
    echo "tinyjax: the tests build cyipopt against IPOPT, which is not installed. Install it (Debian/Ubuntu: sudo apt-get install -y $IPOPT_PKGS) and run this again." >&2
    exit 1
  fi
fi

VENV="$ROOT/.venv"
if [ ! -x "$VENV/bin/python" ]; then "$PY" -m venv "$VENV"; fi
STAMP="$VENV/.tinyjax-installed-$( (cat "$ROOT/pyproject.toml"; echo "$EXTRAS") | sha1sum | cut -c1-12)"
if [ ! -f "$STAMP" ]; then
  echo "tinyjax: installing dependencies into .venv ..."
  "$VENV/bin/python" -m pip install -q --upgrade pip >/dev/null
  "$VENV/bin/python" -m pip install -q -e "$ROOT${EXTRAS:+[$EXTRAS]}"
  touch "$STAMP"
fi
export PATH="$VENV/bin:$PATH"
cd "$ROOT"
