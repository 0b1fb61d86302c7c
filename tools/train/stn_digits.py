"""Trains the PyTorch spatial-transformer tutorial network on distorted, cluttered digits.

Data: the 5000 handwritten digits of Debian's opencv-doc (digits.png, 20x20 each, 500 per class),
split 400/100 per class by digit instance. Every sample is the digit centred in 28x28, then
rotated (+-45 deg), scaled (0.7-1.2) and shifted (+-3 px), plus three 6x6 fragments of other
digits of the same split as clutter. Training distortions are drawn afresh every epoch; the test
set is 3 fixed distortions of each held-out digit.

Writes assets/weights/stn_digits.safetensors (+ .md model card), assets/weights/stn_digits_check/
(input/logits/theta of 8 held-out samples) and assets/digits/distorted_XX.png + labels.json.

Run: /usr/bin/python3 tools/train/stn_digits.py   (CPU, one thread: about 3 + 1.5 minutes of CPU time)
"""
import gzip
import json
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from PIL import Image

import train_common as tc

DIGITS = "/usr/share/doc/opencv-doc/examples/data/digits.png"
SEED = 20240605
EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "50"))  # override only for smoke runs
BATCH = 64
CLUTTER = 3
TEST_REPEATS = 3


class Net(nn.Module):
    """The tutorial's Net, verbatim in structure and parameter names (docs/modules.md section 9)."""

    def __init__(self, use_stn=True):
        super().__init__()
        self.use_stn = use_stn
        self.conv1 = nn.Conv2d(1, 10, kernel_size=5)
        self.conv2 = nn.Conv2d(10, 20, kernel_size=5)
        self.conv2_drop = nn.Dropout2d()
        self.fc1 = nn.Linear(320, 50)
        self.fc2 = nn.Linear(50, 10)
        self.fc_dropout = 0.5
        self.localization = nn.Sequential(
            nn.Conv2d(1, 8, kernel_size=7), nn.MaxPool2d(2, stride=2), nn.ReLU(True),
            nn.Conv2d(8, 10, kernel_size=5), nn.MaxPool2d(2, stride=2), nn.ReLU(True))
        self.fc_loc = nn.Sequential(nn.Linear(10 * 3 * 3, 32), nn.ReLU(True), nn.Linear(32, 3 * 2))
        self.fc_loc[2].weight.data.zero_()
        self.fc_loc[2].bias.data.copy_(torch.tensor([1, 0, 0, 0, 1, 0], dtype=torch.float))

    def theta(self, x):
        xs = self.localization(x).view(-1, 10 * 3 * 3)
        return self.fc_loc(xs).view(-1, 2, 3)

    def stn(self, x):
        theta = self.theta(x)
        grid = F.affine_grid(theta, x.size(), align_corners=False)
        return F.grid_sample(x, grid, align_corners=False)

    def forward(self, x):
        if self.use_stn:
            x = self.stn(x)
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2_drop(self.conv2(x)), 2))
        x = x.view(-1, 320)
        x = F.relu(self.fc1(x))
        x = F.dropout(x, p=self.fc_dropout, training=self.training)
        x = self.fc2(x)
        return F.log_softmax(x, dim=1)


def load_digits():
    path = DIGITS if os.path.exists(DIGITS) else DIGITS + ".gz"
    if path.endswith(".gz"):
        with gzip.open(path) as f:
            img = np.array(Image.open(f))
    else:
        img = np.array(Image.open(path))
    assert img.shape == (1000, 2000), img.shape
    cells = img.reshape(50, 20, 100, 20).transpose(0, 2, 1, 3).reshape(5000, 20, 20)
    labels = np.repeat(np.arange(10), 500)  # 5 rows of 100 digits per class, in order 0..9
    return cells.astype(np.float32) / 255.0, labels


def split(labels, rng):
    train, test = [], []
    for c in range(10):
        idx = rng.permutation(np.flatnonzero(labels == c))
        train.append(idx[:400])
        test.append(idx[400:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def distort(cells, rng, pool=None):
    """cells [B,20,20] in [0,1] -> distorted, cluttered [B,1,28,28] (numpy RNG -> deterministic).
    Clutter fragments come from `pool` (default: the batch itself), always of the same split."""
    pool = cells if pool is None else pool
    b = cells.shape[0]
    canvas = np.zeros((b, 1, 28, 28), np.float32)
    canvas[:, 0, 4:24, 4:24] = cells
    angle = np.deg2rad(rng.uniform(-45, 45, b))
    scale = rng.uniform(0.7, 1.2, b)
    shift = rng.uniform(-3, 3, (b, 2)) * (2.0 / 28.0)  # pixels -> normalised units
    # Forward map M p + t in normalised coordinates; affine_grid wants its inverse.
    cos, sin = np.cos(angle), np.sin(angle)
    inv = np.zeros((b, 2, 3), np.float32)
    inv[:, 0, 0] = cos / scale
    inv[:, 0, 1] = sin / scale
    inv[:, 1, 0] = -sin / scale
    inv[:, 1, 1] = cos / scale
    inv[:, :, 2] = -np.einsum("bij,bj->bi", inv[:, :, :2], shift)
    theta = torch.from_numpy(inv)
    x = torch.from_numpy(canvas)
    grid = F.affine_grid(theta, x.shape, align_corners=False)
    out = F.grid_sample(x, grid, align_corners=False).numpy()
    # Clutter: 6x6 fragments of other digits, max-composited at random places.
    src = rng.integers(0, pool.shape[0], (b, CLUTTER))
    fy, fx = rng.integers(2, 12, (b, CLUTTER)), rng.integers(2, 12, (b, CLUTTER))
    py, px = rng.integers(0, 23, (b, CLUTTER)), rng.integers(0, 23, (b, CLUTTER))
    for i in range(b):
        for j in range(CLUTTER):
            frag = pool[src[i, j], fy[i, j]:fy[i, j] + 6, fx[i, j]:fx[i, j] + 6]
            region = out[i, 0, py[i, j]:py[i, j] + 6, px[i, j]:px[i, j] + 6]
            np.maximum(region, frag, out=region)
    return torch.from_numpy(np.clip(out, 0, 1))


def train(use_stn, cells, labels, train_idx, test_x, test_y):
    torch.manual_seed(SEED + 1)  # identical classifier initialisation for both runs
    model = Net(use_stn)
    # Trained without the tutorial's dropout: on a few thousand steps this small net underfits
    # with it. Dropout has no parameters and no effect at inference, so the weights are the same.
    model.conv2_drop.p = 0.0
    model.fc_dropout = 0.0
    loc_params = list(model.localization.parameters()) + list(model.fc_loc.parameters())
    loc_ids = {id(p) for p in loc_params}
    cls_params = [p for p in model.parameters() if id(p) not in loc_ids]
    groups = [{"params": cls_params, "lr": 1e-3}]
    if use_stn:
        groups.append({"params": loc_params, "lr": 5e-4})  # a calmer localiser trains stably
    opt = torch.optim.Adam(groups)
    steps = EPOCHS * (len(train_idx) // BATCH)
    sched = torch.optim.lr_scheduler.OneCycleLR(
        opt, max_lr=[g["lr"] for g in groups], total_steps=steps, pct_start=0.15)
    rng = np.random.default_rng(SEED + 2)
    start, cpu_start = time.time(), time.process_time()
    for epoch in range(EPOCHS):
        model.train()
        order = rng.permutation(train_idx)
        x_all = distort(cells[order], rng)
        y_all = torch.from_numpy(labels[order]).long()
        for s in range(len(order) // BATCH):
            x, y = x_all[s * BATCH:(s + 1) * BATCH], y_all[s * BATCH:(s + 1) * BATCH]
            opt.zero_grad()
            loss = F.nll_loss(model(x), y)
            loss.backward()
            opt.step()
            sched.step()
        if epoch % 10 == 9 or epoch == EPOCHS - 1:
            acc = accuracy(model, test_x, test_y)
            print(f"  {'stn' if use_stn else 'plain'} epoch {epoch + 1}: loss {loss.item():.3f} "
                  f"test acc {acc:.4f} ({time.time() - start:.0f} s)", flush=True)
    return model, time.time() - start, time.process_time() - cpu_start


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    pred = torch.cat([model(x[i:i + 500]).argmax(1) for i in range(0, len(x), 500)])
    return (pred == torch.from_numpy(y)).float().mean().item()


def main():
    torch.set_num_threads(1)
    tc.seed_everything(SEED)
    cells, labels = load_digits()
    rng = np.random.default_rng(SEED)
    train_idx, test_idx = split(labels, rng)
    test_cells = np.repeat(cells[test_idx], TEST_REPEATS, axis=0)
    test_y = np.repeat(labels[test_idx], TEST_REPEATS)
    # Test distortions only draw fragments from held-out digits.
    test_x = distort_with_pool(test_cells, cells[test_idx], np.random.default_rng(SEED + 3))

    print(f"digits: {len(train_idx)} train, {len(test_idx)} test instances, "
          f"{len(test_x)} distorted test samples", flush=True)
    stn, stn_time, stn_cpu = train(True, cells, labels, train_idx, test_x, test_y)
    plain, plain_time, plain_cpu = train(False, cells, labels, train_idx, test_x, test_y)
    stn_acc, plain_acc = accuracy(stn, test_x, test_y), accuracy(plain, test_x, test_y)
    print(f"test accuracy: stn {stn_acc:.4f} ({stn_time:.0f} s, {stn_cpu:.0f} s CPU), "
          f"plain {plain_acc:.4f} ({plain_time:.0f} s, {plain_cpu:.0f} s CPU)")

    os.makedirs(tc.WEIGHTS, exist_ok=True)
    weights = {k: v for k, v in tc.state_dict_for_export(stn).items()}
    tc.save_safetensors(weights, os.path.join(tc.WEIGHTS, "stn_digits.safetensors"),
                        metadata={"model": "stn_digits", "torch": torch.__version__})

    # Check pair: 8 held-out samples, one of each of the first 8 classes.
    stn.eval()
    pick = [int(np.flatnonzero(test_y == c)[0]) for c in range(8)]
    x = test_x[pick]
    with torch.no_grad():
        theta = stn.theta(x)
        logits = stn(x)
    tc.save_check_pair(os.path.join(tc.WEIGHTS, "stn_digits_check"), input=x, logits=logits,
                       theta=theta, labels=torch.tensor([float(test_y[i]) for i in pick]))

    # 16 held-out distorted digits as 8-bit PNGs for the samples.
    digits_dir = os.path.join(tc.ASSETS, "digits")
    os.makedirs(digits_dir, exist_ok=True)
    sel = np.random.default_rng(SEED + 4).choice(len(test_x), 16, replace=False)
    meta = {}
    for k, i in enumerate(sel):
        name = f"distorted_{k:02d}.png"
        # The PNG is what the C++ side reads, so the prediction is made from the 8-bit pixels.
        pixels = np.round(test_x[i, 0].numpy() * 255).astype(np.uint8)
        Image.fromarray(pixels, mode="L").save(os.path.join(digits_dir, name))
        with torch.no_grad():
            pred = stn(torch.from_numpy(pixels.astype(np.float32) / 255)[None, None]).argmax(1)
        meta[name] = {"label": int(test_y[i]), "stn_prediction": int(pred)}
    with open(os.path.join(digits_dir, "labels.json"), "w") as f:
        json.dump(meta, f, indent=1, sort_keys=True)

    with open(os.path.join(tc.WEIGHTS, "stn_digits_results.json"), "w") as f:
        json.dump({"stn_test_accuracy": stn_acc, "plain_test_accuracy": plain_acc,
                   "stn_train_seconds": round(stn_time, 1),
                   "plain_train_seconds": round(plain_time, 1),
                   "stn_train_cpu_seconds": round(stn_cpu, 1),
                   "plain_train_cpu_seconds": round(plain_cpu, 1),
                   "test_samples": len(test_x), "epochs": EPOCHS, "torch": torch.__version__},
                  f, indent=1)


def distort_with_pool(cells, pool, rng):
    return torch.cat([distort(cells[i:i + 500], rng, pool) for i in range(0, len(cells), 500)])


if __name__ == "__main__":
    main()
