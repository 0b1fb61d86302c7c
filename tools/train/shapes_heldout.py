"""Writes the attention_shapes held-out test set (the 2000 images attention_shapes.py evaluates
on, same seed and generator) as PNGs plus annotations.json, for measuring the C++ model on it:

  /usr/bin/python3 tools/train/shapes_heldout.py /tmp/shapes_heldout
  ./build/release/samples/attention_demo --input /tmp/shapes_heldout --stats-only

The folder is not committed (about 8 MB); regenerating it takes a few seconds.
"""
import json
import os
import sys

import numpy as np
from PIL import Image

import attention_shapes as shapes


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: shapes_heldout.py OUTPUT_FOLDER")
    out = sys.argv[1]
    os.makedirs(out, exist_ok=True)
    # attention_shapes.main() draws the test set from its own generator seeded SEED + 1, so the
    # set does not depend on the training images drawn before it.
    rgb, labels, boxes = shapes.make_set(shapes.TEST, np.random.default_rng(shapes.SEED + 1))
    notes = {}
    for i in range(len(rgb)):
        name = f"heldout_{i:04d}.png"
        Image.fromarray(rgb[i]).save(os.path.join(out, name))
        notes[name] = {"label": int(labels[i]), "class": shapes.CLASSES[labels[i]],
                       "box_xyxy": [int(v) for v in boxes[i]]}
    with open(os.path.join(out, "annotations.json"), "w") as f:
        json.dump({"classes": shapes.CLASSES, "images": notes}, f, indent=1, sort_keys=True)
    print(f"wrote {len(rgb)} images to {out}")


if __name__ == "__main__":
    main()
