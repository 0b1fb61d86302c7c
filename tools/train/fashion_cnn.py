"""Trains FashionCnn (fashion_models.py: SE, SelectiveKernel and CBAM blocks from timm's layers)
on Fashion-MNIST from Debian's dataset-fashion-mnist.

Recipe: AdamW (weight decay 0.05), batch 128, one-cycle schedule to lr 3e-3, random horizontal
flip and +-2 px shift; seeds fixed, deterministic algorithms, one thread.

Writes assets/weights/fashion_cnn.safetensors, assets/weights/fashion_cnn_check/ (input, logits
and the SE / SK / CBAM maps of 4 test images, for the C++ tests) and
assets/weights/fashion_cnn_train.json. The full-test-set accuracy of the model card comes from
tools/train/fashion_eval.py.

Run: /usr/bin/python3 tools/train/fashion_cnn.py   (one thread: about 125 s CPU per epoch, 8 epochs)
"""
import json
import os

import torch

import fashion_common as fc
import train_common as tc
from fashion_models import FashionCnn

SEED = 20261201
EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "8"))  # the shipped weights; fewer for smoke runs
BATCH = 128


def maps_of(model, x):
    """The attention maps the C++ FashionCnn returns, computed by hooking timm's modules."""
    maps = {}
    se, sk, cbam = model.se, model.sk, model.cbam
    hooks = [
        se.fc2.register_forward_hook(lambda m, i, o: maps.__setitem__("se", torch.sigmoid(o).flatten(1))),
        sk.attn.register_forward_hook(lambda m, i, o: maps.__setitem__("sk", o.flatten(2))),
    ]
    with torch.no_grad():
        feats = model.features(x)
        logits = model.head(feats.mean((2, 3)))
        x0 = model.conv3(torch.nn.functional.max_pool2d(
            model.sk(torch.nn.functional.max_pool2d(model.se(model.stem(x)), 2)), 2))
        c = cbam.channel
        g = torch.sigmoid(c.fc2(torch.relu(c.fc1(x0.mean((2, 3), keepdim=True)))) +
                          c.fc2(torch.relu(c.fc1(x0.amax((2, 3), keepdim=True)))))
        maps["channel_attention"] = g.flatten(1)
        x1 = x0 * g
        d = torch.cat([x1.mean(1, keepdim=True), x1.amax(1, keepdim=True)], 1)
        maps["spatial_attention"] = torch.sigmoid(cbam.spatial.conv(d))
        maps["features"] = feats
        maps["cam"] = torch.einsum("kc,nchw->nkhw", model.head.weight, feats) + \
            model.head.bias.view(1, -1, 1, 1)
    for h in hooks:
        h.remove()
    return logits, maps


def main():
    torch.set_num_threads(1)
    tc.seed_everything(SEED)
    train_images, train_labels = fc.load("train")
    test_images, test_labels = fc.load("t10k")
    x, y = fc.to_tensor(train_images), torch.from_numpy(train_labels)
    tx, ty = fc.to_tensor(test_images), torch.from_numpy(test_labels)
    torch.manual_seed(SEED + 1)
    model = FashionCnn()
    wall, cpu = fc.train_loop(model, x, y, EPOCHS, BATCH, 3e-3, SEED + 2, transform=fc.augment,
                              test=None, log="fashion_cnn")
    fc.save(model, "fashion_cnn")
    model.eval()
    pick = [int((ty == c).nonzero()[0]) for c in (0, 3, 7, 9)]
    logits, maps = maps_of(model, tx[pick])
    tc.save_check_pair(os.path.join(tc.WEIGHTS, "fashion_cnn_check"), input=tx[pick],
                       logits=logits, labels=ty[pick].float(), **maps)
    with open(os.path.join(tc.WEIGHTS, "fashion_cnn_train.json"), "w") as f:
        json.dump({"epochs": EPOCHS, "batch": BATCH, "train_seconds": round(wall, 1),
                   "train_cpu_seconds": round(cpu, 1), "torch": torch.__version__,
                   "parameters": sum(p.numel() for p in model.parameters())}, f, indent=1)


if __name__ == "__main__":
    main()
