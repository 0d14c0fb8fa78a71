#!/usr/bin/env bash
# Transformers' own model tests on "tpu" beside "cpu" (tools/external_suites.py): downloads the
# sdist of the installed transformers from PyPI into .cache/external/ (once), lays out its common
# model tests and runs them per model file and device. Writes report.md and report.json to
# $cache/report. EXTERNAL_SUITES_CACHE overrides the folder. Installs the test extras
# (requirements-external.txt) first.
#   bash scripts/external_suites.sh [--models bert,gpt2,llama] [--timeout S] [--test-timeout S]
set -euo pipefail
cd "$(dirname "$0")/.."
py=.venv/bin/python
"$py" -m pip install -q -r requirements-external.txt
version=$("$py" -c "import importlib.metadata as m; print(m.version('transformers'))")
cache=${EXTERNAL_SUITES_CACHE:-.cache/external}
sdist=$cache/transformers-$version.tar.gz
if [[ ! -f $sdist ]]; then
  mkdir -p "$cache"
  "$py" -m pip download "transformers==$version" --no-binary :all: --no-deps -d "$cache" -q
fi
rm -rf "$cache/report"
exec nice -n 10 "$py" tools/external_suites.py --sdist "$sdist" --out "$cache/report" "$@"
