#!/usr/bin/env bash
# Regenerates every table (NAME.md, NAME.csv) and figure (NAME.png) in experiments/papers/ from the
# typed-in published values, for NAME in zero-bubble, megatron, dualpipe. Fails (and writes
# nothing further) if a compared cell does not match its published value.
# Usage: bash experiments/papers/regenerate.sh [PATH/TO/pipette]   (default: build/pipette)
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
pipette="${1:-$root/build/pipette}"

for name in zero-bubble megatron dualpipe; do
  "$pipette" papers "$name" --data "$here" --format markdown --check > "$here/$name.md.tmp"
  "$pipette" papers "$name" --data "$here" --format csv --check > "$here/$name.csv.tmp"
  mv "$here/$name.md.tmp" "$here/$name.md"
  mv "$here/$name.csv.tmp" "$here/$name.csv"
  tail -n 1 "$here/$name.md"
done

# Figures: gnuplot reads the CSV tables (comment lines start with '#').
data="$(mktemp -d)"
trap 'rm -rf "$data"' EXIT
# zero-bubble: one line per setting, paper and pipette for each reproduced schedule, ZB-2p paper.
awk -F, '!/^#/ && $1 != "model" {
  key = $1 " m=" $3
  if (!(key in seen)) { seen[key] = ++n; label[n] = key }
  i = seen[key]
  if ($5 != "") paper[i, $4] = $5
  if ($6 != "-") pipette[i, $4] = $6
} END {
  split("1F1B 1F1B-I ZB-H1 ZB-H2", cols, " ")
  for (i = 1; i <= n; i++) {
    line = i " \"" label[i] "\""
    for (c = 1; c <= 4; c++) line = line " " paper[i, cols[c]] " " pipette[i, cols[c]]
    print line " " paper[i, "ZB-2p"]
  }
}' "$here/zero-bubble.csv" > "$data/zero-bubble.dat"
awk -F, '!/^#/ && $1 != "p" { print $1, $2, $3, $4, $5 }' "$here/megatron.csv" > "$data/megatron.dat"
awk -F, '!/^#/ && $1 != "method" { print $1, $3, $5, $7, $8, ($15 == "yes") }' "$here/dualpipe.csv" \
  > "$data/dualpipe.dat"
for name in zero-bubble megatron dualpipe; do
  gnuplot -e "data='$data/$name.dat'; out='$here/$name.png'" "$here/$name.gp"
done
echo "wrote $here/{zero-bubble,megatron,dualpipe}.{md,csv,png}"
