#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# Fails when a core layer includes a header of a layer above it (docs/architecture.md). The build
# already refuses it (a layer does not see the include folders above it); this names the line.
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A below=(
  [model]="model"
  [proc]="proc model"
  [sampling]="sampling proc model"
  [store]="store model"
  [record]="record sampling proc store model"
  [analysis]="analysis store model"
  [output]="output analysis store model"
)
status=0
for layer in "${!below[@]}"; do
  # Every public header a layer may include: its own and those of the layers below it.
  allowed=" "
  for l in ${below[$layer]}; do
    for h in core/$l/include/loaderlens/*.hpp; do allowed+="$(basename "$h") "; done
  done
  while IFS= read -r hit; do
    header=$(sed -n 's/.*#include "loaderlens\/\([^"]*\)".*/\1/p' <<<"${hit#*:*:}")
    if [[ -n $header && $allowed != *" $header "* ]]; then
      echo "layers: $hit: $layer includes loaderlens/$header, not of a layer below it" >&2
      status=1
    fi
  done < <(grep -n '#include "loaderlens/' -r "core/$layer" || true)
done
exit $status
