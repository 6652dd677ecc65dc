#!/usr/bin/env bash
# The stages after the README's test command: what a user installs must work on its own.
#   runtime: the README's first command (pip install -e ., no test extra) in a fresh venv,
#            then every entry point smoke-tested there (.ci/smoke_runtime.py)
#   wheel:   python -m build (sdist, then the wheel from it), the wheel installed in another
#            fresh venv and run from outside the checkout (demo, investigations, serve)
# A runtime import missing from [project.dependencies] fails here. pip's cache is reused.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
work=$(mktemp -d "${TMPDIR:-/tmp}/goodput-ci.XXXXXX")
trap 'rm -rf "$work"' EXIT
stage=${1:-all}

if [[ $stage == all || $stage == runtime ]]; then
  echo "== runtime-only install (the README's first command) and every entry point"
  python3 -m venv "$work/runtime" && "$work/runtime/bin/pip" install -q -e .
  "$work/runtime/bin/python" .ci/smoke_runtime.py
fi

if [[ $stage == all || $stage == wheel ]]; then
  echo "== wheel: python -m build, installed into a fresh venv, run outside the checkout"
  python3 -m venv "$work/build" && "$work/build/bin/pip" install -q build
  "$work/build/bin/python" -m build -o "$work/dist" . > "$work/build.log" 2>&1 \
    || { tail -30 "$work/build.log"; exit 1; }
  python3 -m venv "$work/wheel" && "$work/wheel/bin/pip" install -q "$work"/dist/*.whl
  (cd "$work" && "$work/wheel/bin/python" "$repo/.ci/smoke_runtime.py" --wheel)
fi
