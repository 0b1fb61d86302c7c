"""Measures the shipped Fashion-MNIST weights on the full 10,000-image test set, the numbers the
model cards quote:

  fashion_cnn         assets/weights/fashion_cnn.safetensors on the test images
  fashion_vit         assets/weights/fashion_vit.safetensors on the test images
  stn_fashion         the spatial-transformer classifier on the RTS-distorted test set
                      (stn_fashion.TEST_SEED: one fixed distortion per test image, 8-bit pixels)
  stn_fashion_identity  the same weights with theta forced to the identity (transformer off,
                      classifier unchanged)
  stn_fashion_plain   the same classifier trained without a transformer (same recipe)

Run: /usr/bin/python3 tools/train/fashion_eval.py [names...]   (default: all)
Writes assets/weights/fashion_eval.json (merged with what is there) and prints it.
"""
import json
import os
import sys

import torch

import fashion_common as fc
import stn_digits as sd
import stn_fashion
import train_common as tc
from fashion_models import FashionCnn, fashion_vit


class IdentityStn(sd.Net):
    """The tutorial Net whose localisation output is replaced by the identity transform."""

    def theta(self, x):
        eye = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        return eye.expand(x.shape[0], 2, 3)


def load(model, name):
    model.load_state_dict(fc.load_safetensors(os.path.join(tc.WEIGHTS, name + ".safetensors")))
    return model.eval()


def main():
    torch.set_num_threads(1)
    names = sys.argv[1:] or ["fashion_cnn", "fashion_vit", "stn_fashion", "stn_fashion_identity",
                             "stn_fashion_plain"]
    path = os.path.join(tc.WEIGHTS, "fashion_eval.json")
    result = json.load(open(path)) if os.path.exists(path) else {}
    images, labels = fc.load("t10k")
    x, y = fc.to_tensor(images), torch.from_numpy(labels)
    rts = None
    for name in names:
        if name == "fashion_cnn":
            acc = fc.accuracy(load(FashionCnn(), name), x, y)
        elif name == "fashion_vit":
            acc = fc.accuracy(load(fashion_vit(), name), x, y)
        else:
            if rts is None:
                rts = fc.rts_test_set(stn_fashion.TEST_SEED)
            weights = {"stn_fashion": ("stn_fashion", sd.Net, True),
                       "stn_fashion_identity": ("stn_fashion", IdentityStn, True),
                       "stn_fashion_plain": ("stn_fashion_plain", sd.Net, False)}[name]
            acc = fc.accuracy(load(weights[1](weights[2]), weights[0]), *rts)
        result[name] = {"test_accuracy": round(acc, 4), "test_images": 10000}
        print(name, result[name], flush=True)
    with open(path, "w") as f:
        json.dump(result, f, indent=1, sort_keys=True)
    print(json.dumps(result, indent=1, sort_keys=True))


if __name__ == "__main__":
    main()
