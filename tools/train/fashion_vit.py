"""Trains a small ViT (fashion_models.fashion_vit: timm's VisionTransformer, patch 4, 4 blocks,
width 64, 4 heads) on Fashion-MNIST from Debian's dataset-fashion-mnist.

Recipe: AdamW (weight decay 0.05), batch 128, one-cycle schedule to lr 2e-3, random horizontal
flip and +-2 px shift; seeds fixed, one thread.

Writes assets/weights/fashion_vit.safetensors (timm's key names), assets/weights/fashion_vit_check/
(input, logits and the per-block attention [N, heads, 50, 50] of 2 test images) and
assets/weights/fashion_vit_train.json. Accuracy: tools/train/fashion_eval.py.

Run: /usr/bin/python3 tools/train/fashion_vit.py   (one thread: about 100 s CPU per epoch)
"""
import json
import os

import torch

import fashion_common as fc
import train_common as tc
from fashion_models import fashion_vit

SEED = 20261202
EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "2"))  # override only for smoke runs
BATCH = 128


def attention_maps(model, x):
    """Each block's softmax attention [N, heads, 1 + 49, 1 + 49], recomputed from its qkv."""
    out = {}
    with torch.no_grad():
        t = model.patch_embed(x)
        t = model._pos_embed(t)
        for i, blk in enumerate(model.blocks):
            h = blk.norm1(t)
            b, n, c = h.shape
            qkv = blk.attn.qkv(h).reshape(b, n, 3, blk.attn.num_heads, c // blk.attn.num_heads)
            q, k, _ = qkv.permute(2, 0, 3, 1, 4).unbind(0)
            out[f"attention_{i}"] = ((q * blk.attn.scale) @ k.transpose(-2, -1)).softmax(-1)
            t = blk(t)
    return out


def main():
    torch.set_num_threads(1)
    tc.seed_everything(SEED)
    train_images, train_labels = fc.load("train")
    test_images, test_labels = fc.load("t10k")
    x, y = fc.to_tensor(train_images), torch.from_numpy(train_labels)
    tx, ty = fc.to_tensor(test_images), torch.from_numpy(test_labels)
    torch.manual_seed(SEED + 1)
    model = fashion_vit()
    wall, cpu = fc.train_loop(model, x, y, EPOCHS, BATCH, 2e-3, SEED + 2, transform=fc.augment,
                              test=None, log="fashion_vit")
    fc.save(model, "fashion_vit")
    model.eval()
    pick = [int((ty == c).nonzero()[0]) for c in (0, 9)]
    with torch.no_grad():
        logits = model(tx[pick])
    tc.save_check_pair(os.path.join(tc.WEIGHTS, "fashion_vit_check"), input=tx[pick],
                       logits=logits, labels=ty[pick].float(), **attention_maps(model, tx[pick]))
    with open(os.path.join(tc.WEIGHTS, "fashion_vit_train.json"), "w") as f:
        json.dump({"epochs": EPOCHS, "batch": BATCH, "train_seconds": round(wall, 1),
                   "train_cpu_seconds": round(cpu, 1), "torch": torch.__version__,
                   "parameters": sum(p.numel() for p in model.parameters())}, f, indent=1)


if __name__ == "__main__":
    main()
