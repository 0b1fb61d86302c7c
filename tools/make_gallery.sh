#!/usr/bin/env bash
# Regenerates docs/gallery/*.png from the samples' own output: each picture is what the command
# listed in README.md writes, reduced to a 96-colour palette PNG (Pillow, /usr/bin/python3) so
# the repository stays small. Usage: bash tools/make_gallery.sh [build folder, default build/release]
set -euo pipefail
cd "$(dirname "$0")/.."
bin="${1:-build/release}/samples"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p docs/gallery

run() {  # run <picture name> <file the sample writes, relative to its output> <sample> <args...>
  local name="$1" file="$2" sample="$3"
  shift 3
  "$bin/$sample" --output="$tmp/$name" "$@" > /dev/null 2>&1
  /usr/bin/python3 - "$tmp/$name/$file" "docs/gallery/$name.png" <<'PY'
import sys
from PIL import Image
Image.open(sys.argv[1]).convert("RGB").quantize(96, method=Image.MEDIANCUT, dither=Image.NONE) \
    .save(sys.argv[2], optimize=True)
PY
  echo "docs/gallery/$name.png"
}

run attention_demo_shape_03 shape_03_sheet.png attention_demo \
    --input=assets/synthetic/shape_03.png --size=160
run attention_demo_chelsea chelsea_sheet.png attention_demo \
    --input=assets/images/chelsea.jpg --size=160
run attention_demo_synthetic_index index.png attention_demo --input=assets/synthetic --size=128
run deform_sampling_astronaut astronaut_deform.png deform_sampling \
    --input=assets/images/astronaut.jpg --size=240
run self_attention_query_chelsea chelsea_queries.png self_attention_query \
    --input=assets/images/chelsea.jpg --size=200
run self_attention_query_shape_03 shape_03_queries.png self_attention_query \
    --input=assets/synthetic/shape_03.png --size=160
