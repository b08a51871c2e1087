#!/usr/bin/env bash
# Run scripts/bench/tpe-trade.py (Optuna TPE baselines on the trade bench's exported
# worlds) in its own venv at ~/.cache/sgtune/optuna-venv, created on first use
# (python3 -m venv; pip install optuna==5.1.0 numpy). All arguments go to the .py:
#
#   TRADE_EXPORT=target/trade-worlds cargo bench --bench trade   # export the worlds
#   scripts/bench/tpe-trade.sh                                   # target/trade-worlds
#   scripts/bench/tpe-trade.sh DIR --repeats 20 --jobs 2 --out DIR/tpe.md
set -euo pipefail
VENV=${SGTUNE_OPTUNA_VENV:-$HOME/.cache/sgtune/optuna-venv}
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c 'import optuna, numpy' 2>/dev/null; then
    mkdir -p "$(dirname "$VENV")"
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check optuna==5.1.0 numpy
fi
exec "$VENV/bin/python" "$(dirname "$0")/tpe-trade.py" "$@"
