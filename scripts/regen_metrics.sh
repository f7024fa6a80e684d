#!/usr/bin/env bash
# Regenerates the generated head of docs/METRICS.md (`tapstat schema --markdown`) and
# keeps the hand-written part, which starts at the line `# Notes`.
# usage: scripts/regen_metrics.sh [TAPSTAT]   (default target/debug/tapstat)
set -euo pipefail
cd "$(dirname "$0")/.."
T=${1:-target/debug/tapstat}
{ "$T" schema --markdown; printf '\n\n'; sed -n '/^# Notes$/,$p' docs/METRICS.md; } > docs/METRICS.md.new
grep -q '^# Notes$' docs/METRICS.md.new || { echo "docs/METRICS.md has no '# Notes' line" >&2; rm docs/METRICS.md.new; exit 1; }
mv docs/METRICS.md.new docs/METRICS.md
