"""Evaluates the shipped spatial-transformer classifier on the held-out distorted digits
(the 3000 samples stn_digits.py tests on, same seeds) three ways:

  stn       the shipped weights as they are (the model card's 85.1 %)
  identity  the same weights with theta forced to the identity (the transformer switched off,
            the classifier unchanged)
  plain     a classifier trained without the transformer, same recipe (stn_digits.py's
            baseline, not shipped; retrained here with --retrain-plain, ~100 s CPU)

Run: /usr/bin/python3 tools/train/stn_eval.py [--retrain-plain]
Prints one JSON object.
"""
import json
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

import stn_digits as sd
import train_common as tc


def load_safetensors(path):
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
        data = f.read()
    out = {}
    dtypes = {"F32": np.float32, "I64": np.int64}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        begin, end = meta["data_offsets"]
        arr = np.frombuffer(data[begin:end], dtype=dtypes[meta["dtype"]]).reshape(meta["shape"])
        out[name] = torch.from_numpy(arr.copy())
    return out


class IdentityStn(sd.Net):
    """The tutorial Net whose localisation output is replaced by the identity transform."""

    def theta(self, x):
        eye = torch.tensor([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
        return eye.expand(x.shape[0], 2, 3)


def main():
    torch.set_num_threads(1)
    tc.seed_everything(sd.SEED)
    cells, labels = sd.load_digits()
    train_idx, test_idx = sd.split(labels, np.random.default_rng(sd.SEED))
    test_cells = np.repeat(cells[test_idx], sd.TEST_REPEATS, axis=0)
    test_y = np.repeat(labels[test_idx], sd.TEST_REPEATS)
    test_x = sd.distort_with_pool(test_cells, cells[test_idx], np.random.default_rng(sd.SEED + 3))
    weights = load_safetensors(os.path.join(tc.WEIGHTS, "stn_digits.safetensors"))
    result = {"test_samples": len(test_x)}
    for name, cls in (("stn", sd.Net), ("identity", IdentityStn)):
        model = cls(True)
        model.load_state_dict(weights)
        result[name + "_accuracy"] = sd.accuracy(model, test_x, test_y)
    if "--retrain-plain" in sys.argv:
        # train() seeds itself, so the baseline comes out as in stn_digits.py's own run.
        plain, _, cpu = sd.train(False, cells, labels, train_idx, test_x, test_y)
        result["plain_accuracy"] = sd.accuracy(plain, test_x, test_y)
        result["plain_train_cpu_seconds"] = round(cpu, 1)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
