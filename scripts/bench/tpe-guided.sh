#!/usr/bin/env bash
# Run scripts/bench/tpe-guided.py (Optuna TPE baselines on the guided bench's exported hard
# surfaces) in its own venv at ~/.cache/sgtune/optuna-venv, created on first use
# (python3 -m venv; pip install optuna==5.1.0 numpy). All arguments go to the .py:
#
#   GUIDED_EXPORT=target/guided-surfaces cargo bench --bench guided   # export the surfaces
#   scripts/bench/tpe-guided.sh                                      # target/guided-surfaces
#   scripts/bench/tpe-guided.sh DIR --repeats 5 --out DIR/tpe.md
set -euo pipefail
VENV=${SGTUNE_OPTUNA_VENV:-$HOME/.cache/sgtune/optuna-venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import optuna, numpy' 2>/dev/null; then
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check optuna==5.1.0 numpy
fi
exec "$VENV/bin/python" "$(dirname "$0")/tpe-guided.py" "$@"
