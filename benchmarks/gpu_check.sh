#!/usr/bin/env bash
# The GPU check of issue 29 (see benchmarks/gpu_check.py): run from a checkout with its
# environment, e.g.  bash benchmarks/gpu_check.sh --out gpu_check
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(dirname "$here")"
if [ -n "${PYTHON:-}" ] && ! [ -x "$PYTHON" ] && ! command -v "$PYTHON" >/dev/null; then
  echo "error: PYTHON=$PYTHON is not a Python here; give its path, or leave PYTHON unset to use $root/.venv" >&2
  exit 2
fi
python="${PYTHON:-$root/.venv/bin/python}"
[ -x "$python" ] || python="$(command -v "$python" || command -v python3 || true)"
# a checkout without its environment: one line, not an import traceback
if [ -z "$python" ] || ! "$python" -c "import torch" 2>/dev/null; then
  echo "error: ${python:-no python3} cannot import torch; run 'make venv' in $root first, or set PYTHON=/path/to/python" >&2
  exit 2
fi
PYTHONPATH="$root/src${PYTHONPATH:+:$PYTHONPATH}" exec "$python" "$here/gpu_check.py" "$@"
