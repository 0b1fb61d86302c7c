"""Trains the spatial-transformer classifier (stn_digits.Net: the PyTorch tutorial network, cvattn's
StnClassifier) on Fashion-MNIST distorted by the STN paper's RTS protocol (fashion_common.rts:
rotation +-45 degrees, scale 0.7-1.2, translation within 42x42, presented at 28x28), and the same
classifier without the transformer, same recipe and initialisation.

Training distortions are drawn afresh for every batch; the test set is one fixed distortion of
each of the 10,000 test images (fashion_common.rts_test_set, seed TEST_SEED).

Writes assets/weights/stn_fashion.safetensors (with transformer), assets/weights/stn_fashion_check/
(input, logits, theta of 8 distorted test images), assets/weights/stn_fashion_plain.safetensors
(without; kept so fashion_eval.py measures both) and assets/weights/stn_fashion_train.json.

Run: /usr/bin/python3 tools/train/stn_fashion.py
"""
import json
import os

import numpy as np
import torch

import fashion_common as fc
import stn_digits as sd
import train_common as tc

SEED = 20261203
TEST_SEED = 20261204
EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "6"))  # override only for smoke runs
BATCH = 64


def make_net(use_stn):
    torch.manual_seed(SEED + 1)  # identical classifier initialisation for both runs
    net = sd.Net(use_stn)
    net.conv2_drop.p = 0.0  # as stn_digits.py: dropout off (no parameters, no inference effect)
    net.fc_dropout = 0.0
    return net




def main():
    torch.set_num_threads(1)
    tc.seed_everything(SEED)
    train_images, train_labels = fc.load("train")
    x, y = fc.to_tensor(train_images), torch.from_numpy(train_labels)
    tx, ty = fc.rts_test_set(TEST_SEED)
    rng = np.random.default_rng(SEED + 2)

    def distort(xb, _gen):
        return fc.quantise(fc.rts(xb, rng))

    results = {"epochs": EPOCHS, "batch": BATCH, "torch": torch.__version__}
    for name, use_stn in (("stn_fashion", True), ("stn_fashion_plain", False)):
        net = make_net(use_stn)
        # cross_entropy on log_softmax outputs equals nll_loss: log_softmax is idempotent.
        wall, cpu = fc.train_loop(net, x, y, EPOCHS, BATCH, 2e-3, SEED + 3, transform=distort,
                                  weight_decay=0.0, test=None, log=name)
        fc.save(net, name)
        results[name + "_train_cpu_seconds"] = round(cpu, 1)
        results[name + "_train_seconds"] = round(wall, 1)
        if use_stn:
            net.eval()
            pick = [int(np.flatnonzero(ty == c)[0]) for c in range(8)]
            with torch.no_grad():
                theta, logits = net.theta(tx[pick]), net(tx[pick])
            tc.save_check_pair(os.path.join(tc.WEIGHTS, "stn_fashion_check"), input=tx[pick],
                               logits=logits, theta=theta,
                               labels=torch.tensor([float(ty[i]) for i in pick]))
    with open(os.path.join(tc.WEIGHTS, "stn_fashion_train.json"), "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
