#!/usr/bin/env bash
# Rewrite scripts/constraints.txt from the packages in .venv (after an upgrade there): the
# versions scripts/setup.sh and CI install. Run the tests (and refresh the goldens where a
# rendering library moved pixels on purpose) before committing the new file.
set -euo pipefail
cd "$(dirname "$0")/.."
out=scripts/constraints.txt
{
  sed -n '/^#/p' "$out"
  .venv/bin/python -m pip freeze --exclude-editable --disable-pip-version-check | grep -v '^torch=='
} > "$out.new"
mv "$out.new" "$out"
echo "wrote $out ($(grep -c '==' "$out") pins)"
