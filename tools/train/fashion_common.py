"""Fashion-MNIST helpers shared by the fashion_* trainers and fashion_eval.py.

Data: Debian's dataset-fashion-mnist (`apt-get install dataset-fashion-mnist`), the IDX files in
/usr/share/datasets/fashion-mnist/: 60,000 training and 10,000 test images, 28x28 gray, white
garment on black, 10 classes. Input convention of every model here: gray / 255, no mean or std
(cvattn: from_image(gray, ImageOptions().scale(1.0 / 255))).
"""
import gzip
import json
import os
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F

import train_common as tc

sys.path.insert(0, os.environ.get("TIMM_SOURCE", "/work/timm"))

DATA = os.environ.get("FASHION_MNIST_DIR", "/usr/share/datasets/fashion-mnist")
CLASSES = ["t-shirt/top", "trouser", "pullover", "dress", "coat", "sandal", "shirt", "sneaker",
           "bag", "ankle boot"]

# Published Fashion-MNIST test accuracies (the dataset's README, "Benchmark" table; submitted
# results the authors did not re-test) quoted next to ours in the model cards.
BASELINES = [
    ("Human performance (crowd-sourced, 1000 images)", 0.835),
    ("MLP 256-128-100", 0.8833),
    ("2 Conv+pooling (Kashif Rasul)", 0.876),
    ("3 Conv+pooling+BN", 0.903),
    ("2 Conv+pooling (TensorFlow's doc, benchmark/convnet.py)", 0.916),
    ("2 Conv <100K parameters (hardmaru)", 0.925),
    ("HOG+SVM", 0.926),
    ("ResNet18 + augmentation", 0.949),
    ("WRN-28-10 + random erasing", 0.963),
]


def read_idx(path):
    with gzip.open(path, "rb") as f:
        data = f.read()
    magic = int.from_bytes(data[0:4], "big")
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(magic & 0xFF)]
    return np.frombuffer(data, np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def load(split):
    """split 'train' or 't10k' -> (uint8 [N, 28, 28], int64 [N])."""
    images = read_idx(os.path.join(DATA, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(DATA, f"{split}-labels-idx1-ubyte.gz")).astype(np.int64)
    return images, labels


def to_tensor(images_uint8):
    """[N, 28, 28] uint8 -> [N, 1, 28, 28] float in [0, 1]."""
    return torch.from_numpy(images_uint8.astype(np.float32) / 255.0)[:, None]


def augment(x, gen):
    """Random horizontal flip and a random shift of up to 2 pixels (zero padding)."""
    b = x.shape[0]
    flip = torch.rand(b, generator=gen) < 0.5
    x = torch.where(flip.view(b, 1, 1, 1), x.flip(3), x)
    padded = F.pad(x, (2, 2, 2, 2))
    dy = torch.randint(0, 5, (b,), generator=gen)
    dx = torch.randint(0, 5, (b,), generator=gen)
    rows = (dy.view(b, 1) + torch.arange(28).view(1, 28))          # [B, 28]
    cols = (dx.view(b, 1) + torch.arange(28).view(1, 28))
    out = padded[torch.arange(b).view(b, 1, 1), 0, rows.view(b, 28, 1), cols.view(b, 1, 28)]
    return out[:, None]


def rts(images, rng, canvas=42, out_size=28):
    """The STN paper's RTS distortion (Jaderberg et al. 2015, section 4.1): each image rotated
    uniformly in +-45 degrees, scaled in [0.7, 1.2] and translated at random within a
    `canvas` x `canvas` image, then area-resized to `out_size` (the StnClassifier's input).
    images float [B, 1, 28, 28] in [0, 1] -> [B, 1, out_size, out_size]; numpy RNG, so fixed seeds
    give fixed samples."""
    b = images.shape[0]
    pad = (canvas - 28) // 2
    x = F.pad(images, (pad, canvas - 28 - pad, pad, canvas - 28 - pad))
    angle = np.deg2rad(rng.uniform(-45, 45, b))
    scale = rng.uniform(0.7, 1.2, b)
    # The scaled garment's box stays inside the canvas: centre shift up to (canvas - 28 s) / 2.
    room = np.maximum(canvas - 28 * scale, 0) / 2
    shift = rng.uniform(-1, 1, (b, 2)) * room[:, None] * (2.0 / canvas)  # normalised units
    cos, sin = np.cos(angle), np.sin(angle)
    inv = np.zeros((b, 2, 3), np.float32)  # affine_grid maps output -> input: the inverse
    inv[:, 0, 0] = cos / scale
    inv[:, 0, 1] = sin / scale
    inv[:, 1, 0] = -sin / scale
    inv[:, 1, 1] = cos / scale
    inv[:, :, 2] = -np.einsum("bij,bj->bi", inv[:, :, :2], shift)
    grid = F.affine_grid(torch.from_numpy(inv), x.shape, align_corners=False)
    warped = F.grid_sample(x, grid, align_corners=False)
    return F.interpolate(warped, size=(out_size, out_size), mode="area").clamp(0, 1)


def quantise(x):
    """float [0, 1] -> the 8-bit PNG pixels / 255 (what the C++ samples read)."""
    return torch.round(x * 255) / 255


def rts_test_set(seed):
    """The fixed RTS-distorted test set: all 10,000 test images, one distortion each, quantised
    to 8 bits (the bundled PNGs are exactly these pixels)."""
    images, labels = load("t10k")
    rng = np.random.default_rng(seed)
    x = to_tensor(images)
    out = torch.cat([rts(x[i:i + 1000], rng) for i in range(0, len(x), 1000)])
    return quantise(out), labels


@torch.no_grad()
def accuracy(model, x, y, batch=500):
    model.eval()
    pred = torch.cat([model(x[i:i + batch]).argmax(1) for i in range(0, len(x), batch)])
    return (pred == torch.as_tensor(y)).float().mean().item()


def train_loop(model, x, y, epochs, batch, lr, seed, transform=None, weight_decay=0.05,
               test=None, log=""):
    """AdamW, one-cycle schedule; `transform(xb, gen_or_rng)` makes each batch's inputs.
    Returns (wall seconds, CPU seconds)."""
    opt = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=weight_decay)
    steps = epochs * (len(x) // batch)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=lr, total_steps=steps, pct_start=0.1)
    gen = torch.Generator().manual_seed(seed)
    start, cpu = time.time(), time.process_time()
    for epoch in range(epochs):
        model.train()
        order = torch.randperm(len(x), generator=gen)
        for s in range(len(x) // batch):
            idx = order[s * batch:(s + 1) * batch]
            xb = x[idx] if transform is None else transform(x[idx], gen)
            opt.zero_grad()
            loss = F.cross_entropy(model(xb), y[idx])
            loss.backward()
            opt.step()
            sched.step()
        msg = f"{log} epoch {epoch + 1}/{epochs}: loss {loss.item():.3f}"
        if test is not None:
            msg += f" test acc {accuracy(model, *test):.4f}"
        print(msg + f" ({time.time() - start:.0f} s)", flush=True)
    return time.time() - start, time.process_time() - cpu


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


def save(model, name):
    tc.save_safetensors(tc.state_dict_for_export(model),
                        os.path.join(tc.WEIGHTS, name + ".safetensors"),
                        metadata={"model": name, "torch": torch.__version__})


def write_results(name, results):
    with open(os.path.join(tc.WEIGHTS, name + "_results.json"), "w") as f:
        json.dump(results, f, indent=1, sort_keys=True)
