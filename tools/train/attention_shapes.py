"""Trains a small CNN with SelectiveKernel, DCNv2 and CBAM blocks on a synthetic "find the target"
task where the right place to attend is known.

Data: 64x64 RGB images: a smooth random colour field plus pixel noise, 2-5 solid distractors
(circles, squares, triangles, random colours) and exactly one target: a triangle filled with
two-colour stripes. The class is the stripes' direction: 0 = horizontal, 1 = 45 degrees,
2 = vertical, 3 = 135 degrees. Colours are random, so only the target's texture tells the class.
Every image stores the target's box.

Architecture (state_dict prefixes; timm/mmcv semantics so the C++ modules load it by name):
  stem.0 Conv2d(3,16,3,stride 2,p1,no bias) stem.1 BatchNorm2d(16) stem.2 ReLU      64 -> 32
  stem.3 Conv2d(16,24,3,p1,no bias)         stem.4 BatchNorm2d(24) stem.5 ReLU
  stem.6 MaxPool2d(2)                                                              32 -> 16
  sk     SelectiveKernel(24 -> 24), timm defaults (two 3x3 paths, dilation 1 and 2, split
         input, attention width 8)
  dcn    ModulatedDeformConv2dPack(24 -> 32, 3x3, padding 1, bias), mmcv semantics
  dcn_bn BatchNorm2d(32), then ReLU
  cbam   CbamModule(32), timm defaults (channel MLP 32 -> 2 -> 32, 7x7 spatial conv)
  global average pooling, head Linear(32, 4)

Writes assets/weights/attention_shapes.safetensors, assets/weights/attention_shapes_check/
(inputs, logits and every attention map of 4 held-out images) and assets/synthetic/shape_XX.png
+ annotations.json.

Run: /usr/bin/python3 tools/train/attention_shapes.py   (CPU, one thread, about 3-4 minutes)
"""
import json
import math
import os
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torchvision
from PIL import Image, ImageDraw

import train_common as tc

SEED = 7031
SIZE = 64
TRAIN = int(os.environ.get("TRAIN_IMAGES", "6000"))  # overrides only for smoke runs
TEST = int(os.environ.get("TEST_IMAGES", "2000"))
WIDTHS = (16, 24, 32)  # stem, stem/SK, DCN/CBAM channels
EPOCHS = int(os.environ.get("TRAIN_EPOCHS", "4"))  # override only for smoke runs
BATCH = 32
CLASSES = ["stripes_0", "stripes_45", "stripes_90", "stripes_135"]  # stripe direction, degrees
DISTRACTORS = ["circle", "square", "triangle"]
STRIPE_PERIOD = 6.0  # pixels


# ----------------------------------------------------------------------------------------------
# Data

def draw_mask(kind, cx, cy, r):
    m = Image.new("L", (SIZE, SIZE), 0)
    d = ImageDraw.Draw(m)
    if kind == "circle":
        d.ellipse([cx - r, cy - r, cx + r, cy + r], fill=255)
    elif kind == "square":
        d.rectangle([cx - r, cy - r, cx + r, cy + r], fill=255)
    elif kind == "triangle":
        d.polygon([(cx, cy - r), (cx - r, cy + r), (cx + r, cy + r)], fill=255)
    return np.asarray(m, np.float32) / 255.0


def background(rng, contrast=1.0):
    """A smooth random colour field (4x4 colours, bicubic) plus pixel noise."""
    coarse = rng.uniform(0.15, 0.85, (4, 4, 3))
    coarse = coarse.mean((0, 1)) + contrast * (coarse - coarse.mean((0, 1)))
    field = Image.fromarray(np.round(coarse * 255).astype(np.uint8)).resize((SIZE, SIZE),
                                                                            Image.BICUBIC)
    img = np.asarray(field, np.float64) / 255.0
    return img + rng.normal(0, 0.04, img.shape)


def contrasting(rng, ref):
    while True:
        c = rng.uniform(0, 1, 3)
        if np.abs(c - ref).max() > 0.35:
            return c


def stripes(label, rng):
    """Stripe pattern in [0, 1] whose lines run at label * 45 degrees (0 = horizontal)."""
    yy, xx = np.mgrid[0:SIZE, 0:SIZE].astype(np.float64)
    angle = np.deg2rad(45.0 * label)
    along_normal = -xx * np.sin(angle) + yy * np.cos(angle) + rng.uniform(0, STRIPE_PERIOD)
    return (np.floor(along_normal / (STRIPE_PERIOD / 2)) % 2)[..., None]


def make_image(rng, level=1.0):
    """-> (HxWx3 uint8 RGB, label, target box [x0, y0, x1, y1) in pixels). `level` in [0, 1]
    scales the difficulty (background contrast, number of distractors)."""
    img = background(rng, level)
    label = int(rng.integers(0, 4))
    boxes = []

    def place(r):
        for _ in range(100):
            cx, cy = rng.integers(r + 1, SIZE - r - 1, 2)
            box = (cx - r - 2, cy - r - 2, cx + r + 2, cy + r + 2)
            if all(box[2] <= b[0] or b[2] <= box[0] or box[3] <= b[1] or b[3] <= box[1]
                   for b in boxes):
                boxes.append(box)
                return int(cx), int(cy)
        return None

    def local_mean(cx, cy, r):
        return img[max(cy - r, 0):cy + r + 1, max(cx - r, 0):cx + r + 1].reshape(-1, 3).mean(0)

    # The target: a triangle filled with two-colour stripes; the stripe direction is the class.
    r = int(rng.integers(8, 13))
    cx, cy = place(r)  # the first shape always fits
    m = draw_mask("triangle", cx, cy, r)[..., None]
    ca = contrasting(rng, local_mean(cx, cy, r))
    cb = contrasting(rng, ca)
    fill = ca + (cb - ca) * stripes(label, rng)
    img[:] = img * (1 - m) + fill * m
    ys, xs = np.nonzero(m[..., 0] > 0)
    box = [int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1]
    # Distractors: solid circles, squares and triangles.
    for _ in range(int(round(level * rng.integers(2, 6)))):
        rd = int(rng.integers(4, 11))
        at = place(rd)
        if at is not None:
            kind = DISTRACTORS[int(rng.integers(0, len(DISTRACTORS)))]
            md = draw_mask(kind, at[0], at[1], rd)[..., None]
            img[:] = img * (1 - md) + contrasting(rng, local_mean(at[0], at[1], rd)) * md
    rgb = np.clip(np.round(img * 255), 0, 255).astype(np.uint8)
    return rgb, label, box


def make_set(n, rng, level=1.0):
    imgs, labels, boxes = [], [], []
    for _ in range(n):
        rgb, label, box = make_image(rng, level)
        imgs.append(rgb)
        labels.append(label)
        boxes.append(box)
    return np.stack(imgs), np.array(labels), np.array(boxes)


def to_tensor(rgb_uint8):
    """[N,H,W,3] uint8 RGB -> [N,3,H,W] float in [0,1]: blobFromImage(scale 1/255, swapRB)."""
    return torch.from_numpy(rgb_uint8).permute(0, 3, 1, 2).float().div(255.0)


# ----------------------------------------------------------------------------------------------
# Modules with the reference libraries' parameter names

class ConvNormAct(nn.Module):
    """timm ConvNormAct: keys conv.weight, bn.*."""

    def __init__(self, cin, cout, k, padding, dilation=1, act=True):
        super().__init__()
        self.conv = nn.Conv2d(cin, cout, k, padding=padding, dilation=dilation, bias=False)
        self.bn = nn.BatchNorm2d(cout)
        self.act = act

    def forward(self, x):
        x = self.bn(self.conv(x))
        return F.relu(x) if self.act else x


class SelectiveKernelAttn(nn.Module):
    def __init__(self, channels, num_paths, attn_channels):
        super().__init__()
        self.num_paths = num_paths
        self.fc_reduce = nn.Conv2d(channels, attn_channels, 1, bias=False)
        self.bn = nn.BatchNorm2d(attn_channels)
        self.fc_select = nn.Conv2d(attn_channels, channels * num_paths, 1, bias=False)

    def forward(self, x):  # [B,P,C,H,W] -> [B,P,C,1,1]
        x = x.sum(1).mean((2, 3), keepdim=True)
        x = F.relu(self.bn(self.fc_reduce(x)))
        x = self.fc_select(x)
        b, c, h, w = x.shape
        return torch.softmax(x.view(b, self.num_paths, c // self.num_paths, h, w), dim=1)


class SelectiveKernel(nn.Module):
    """timm SelectiveKernel(in, out) with its defaults: kernel_size [3, 5] with keep_3x3 gives
    two 3x3 paths with dilation 1 and 2; split_input; A = make_divisible(out/16, 8) = 8."""

    def __init__(self, cin, cout):
        super().__init__()
        self.paths = nn.ModuleList([ConvNormAct(cin // 2, cout, 3, padding=d, dilation=d)
                                    for d in (1, 2)])
        self.attn = SelectiveKernelAttn(cout, 2, 8)

    def forward(self, x, maps=None):
        xs = torch.split(x, x.shape[1] // 2, 1)
        f = torch.stack([op(xs[i]) for i, op in enumerate(self.paths)], dim=1)
        a = self.attn(f)
        if maps is not None:
            maps["sk_attention"] = a.flatten(2)  # [B, P, C]
        return (f * a).sum(1)


class ModulatedDeformConv2dPack(nn.Module):
    """mmcv ModulatedDeformConv2dPack (deform_groups 1): keys weight, bias, conv_offset.*."""

    def __init__(self, cin, cout, k, padding):
        super().__init__()
        self.padding = padding
        self.weight = nn.Parameter(torch.empty(cout, cin, k, k))
        self.bias = nn.Parameter(torch.zeros(cout))
        nn.init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        self.conv_offset = nn.Conv2d(cin, 3 * k * k, k, padding=padding, bias=True)
        nn.init.zeros_(self.conv_offset.weight)  # mmcv starts as a plain conv
        nn.init.zeros_(self.conv_offset.bias)

    def forward(self, x, maps=None):
        o = self.conv_offset(x)
        kk = self.weight.shape[2] * self.weight.shape[3]
        offset, mask = o[:, :2 * kk], torch.sigmoid(o[:, 2 * kk:])
        if maps is not None:
            maps["offset"], maps["mask"] = offset, mask
        if self.training:
            return deform_conv2d_by_grid_sample(x, offset, self.weight, self.bias, self.padding,
                                                mask)
        return torchvision.ops.deform_conv2d(x, offset, self.weight, self.bias,
                                             padding=(self.padding, self.padding), mask=mask)


def deform_conv2d_by_grid_sample(x, offset, weight, bias, padding, mask):
    """torchvision.ops.deform_conv2d (stride 1, dilation 1, one offset group) rebuilt from
    grid_sample, whose CPU backward is far faster than torchvision's; docs/modules.md 10.1: the
    bilinear rule is grid_sample's zeros padding with align_corners=True in pixel units. Used for
    training only; inference and every exported number use torchvision's op."""
    b, c, h, w = x.shape
    cout, _, kh, kw = weight.shape
    kk, ho, wo = kh * kw, offset.shape[2], offset.shape[3]
    ki = torch.arange(kk, dtype=x.dtype) // kw
    kj = torch.arange(kk, dtype=x.dtype) % kw
    oy = torch.arange(ho, dtype=x.dtype).view(1, 1, ho, 1) - padding + ki.view(1, kk, 1, 1)
    ox = torch.arange(wo, dtype=x.dtype).view(1, 1, 1, wo) - padding + kj.view(1, kk, 1, 1)
    off = offset.view(b, kk, 2, ho, wo)
    py, px = oy + off[:, :, 0], ox + off[:, :, 1]                     # [B, K, Ho, Wo]
    grid = torch.stack([px * (2.0 / (w - 1)) - 1, py * (2.0 / (h - 1)) - 1], dim=-1)
    v = F.grid_sample(x, grid.view(b, kk * ho, wo, 2), mode="bilinear", padding_mode="zeros",
                      align_corners=True).view(b, c, kk, ho, wo)
    col = (v * mask.view(b, 1, kk, ho, wo)).view(b, c * kk, ho, wo)
    # The im2col product as a 1x1 convolution: oneDNN does it far faster than a batched matmul.
    return F.conv2d(col, weight.reshape(cout, c * kk, 1, 1), bias)


class ChannelAttn(nn.Module):
    def __init__(self, channels, rd):
        super().__init__()
        self.fc1 = nn.Conv2d(channels, rd, 1, bias=False)
        self.fc2 = nn.Conv2d(rd, channels, 1, bias=False)

    def forward(self, x, maps=None):
        a = self.fc2(F.relu(self.fc1(x.mean((2, 3), keepdim=True))))
        m = self.fc2(F.relu(self.fc1(x.amax((2, 3), keepdim=True))))
        g = torch.sigmoid(a + m)
        if maps is not None:
            maps["channel_attention"] = g.flatten(1)  # [B, C]
        return x * g


class SpatialAttn(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = ConvNormAct(2, 1, 7, padding=3, act=False)

    def forward(self, x, maps=None):
        d = torch.cat([x.mean(1, keepdim=True), x.amax(1, keepdim=True)], dim=1)
        s = torch.sigmoid(self.conv(d))
        if maps is not None:
            maps["spatial_attention"] = s  # [B, 1, H, W]
        return x * s


class CbamModule(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.channel = ChannelAttn(channels, max(1, int(channels / 16 + 0.5)))
        self.spatial = SpatialAttn()

    def forward(self, x, maps=None):
        return self.spatial(self.channel(x, maps), maps)


class ShapesNet(nn.Module):
    def __init__(self):
        super().__init__()
        c1, c2, c3 = WIDTHS
        self.stem = nn.Sequential(
            nn.Conv2d(3, c1, 3, stride=2, padding=1, bias=False), nn.BatchNorm2d(c1), nn.ReLU(),
            nn.Conv2d(c1, c2, 3, padding=1, bias=False), nn.BatchNorm2d(c2), nn.ReLU(),
            nn.MaxPool2d(2))
        self.sk = SelectiveKernel(c2, c2)
        self.dcn = ModulatedDeformConv2dPack(c2, c3, 3, padding=1)
        self.dcn_bn = nn.BatchNorm2d(c3)
        self.cbam = CbamModule(c3)
        self.head = nn.Linear(c3, len(CLASSES))

    def forward(self, x, maps=None):
        x = self.stem(x)                               # [B,c2,16,16]
        x = self.sk(x, maps)                           # [B,c2,16,16]
        x = F.relu(self.dcn_bn(self.dcn(x, maps)))     # [B,c3,16,16]
        x = self.cbam(x, maps)                         # [B,c3,16,16]
        return self.head(x.mean((2, 3)))               # [B,4]


# ----------------------------------------------------------------------------------------------

@torch.no_grad()
def evaluate(model, x, y, boxes):
    model.eval()
    correct, inside = 0, 0
    for i in range(0, len(x), 250):
        maps = {}
        logits = model(x[i:i + 250], maps)
        correct += (logits.argmax(1) == y[i:i + 250]).sum().item()
        inside += peak_inside(maps["spatial_attention"], boxes[i:i + 250]).sum()
    return correct / len(x), inside / len(x)


def peak_inside(spatial, boxes):
    """Whether the centre of the spatial gate's arg-max cell lies in the target box."""
    b, _, h, w = spatial.shape
    idx = spatial.view(b, -1).argmax(1).numpy()
    py, px = (idx // w + 0.5) * SIZE / h, (idx % w + 0.5) * SIZE / w
    return (px >= boxes[:, 0]) & (px < boxes[:, 2]) & (py >= boxes[:, 1]) & (py < boxes[:, 3])


def main():
    torch.set_num_threads(1)
    tc.seed_everything(SEED)
    t0, cpu0 = time.time(), time.process_time()
    train_rgb, train_y, _ = make_set(TRAIN, np.random.default_rng(SEED))
    test_rgb, test_y, test_boxes = make_set(TEST, np.random.default_rng(SEED + 1))
    data_cpu = time.process_time() - cpu0
    print(f"data: {TRAIN} train, {TEST} test images in {time.time() - t0:.0f} s "
          f"({data_cpu:.0f} s CPU)", flush=True)
    train_x, test_x = to_tensor(train_rgb), to_tensor(test_rgb)
    train_t, test_t = torch.from_numpy(train_y).long(), torch.from_numpy(test_y).long()

    torch.manual_seed(SEED + 2)
    model = ShapesNet()
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.0)
    steps_per_epoch = TRAIN // BATCH
    # A short warm-up: on a budget of a few thousand steps a long one wastes the first epoch.
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=3e-3, pct_start=0.05, div_factor=10,
                                                total_steps=EPOCHS * steps_per_epoch)
    gen = torch.Generator().manual_seed(SEED + 3)
    start, cpu_start = time.time(), time.process_time()
    for epoch in range(EPOCHS):
        model.train()
        order = torch.randperm(TRAIN, generator=gen)
        for s in range(steps_per_epoch):
            idx = order[s * BATCH:(s + 1) * BATCH]
            x = train_x[idx]
            opt.zero_grad()
            loss = F.cross_entropy(model(x), train_t[idx])
            loss.backward()
            opt.step()
            sched.step()
        acc, inside = evaluate(model, test_x, test_t, test_boxes)
        print(f"epoch {epoch + 1}: loss {loss.item():.3f} test acc {acc:.4f} "
              f"peak in box {inside:.3f} ({time.time() - start:.0f} s)", flush=True)
    train_time, train_cpu = time.time() - start, time.process_time() - cpu_start
    acc, inside = evaluate(model, test_x, test_t, test_boxes)
    box_area = ((test_boxes[:, 2] - test_boxes[:, 0]) * (test_boxes[:, 3] - test_boxes[:, 1]))
    chance = float((box_area / SIZE**2).mean())
    print(f"test accuracy {acc:.4f}, spatial-attention peak inside the target box {inside:.3f} "
          f"(mean box area {chance:.3f} of the image), trained in {train_time:.0f} s "
          f"({train_cpu:.0f} s CPU)")

    tc.save_safetensors(tc.state_dict_for_export(model),
                        os.path.join(tc.WEIGHTS, "attention_shapes.safetensors"),
                        metadata={"model": "attention_shapes", "torch": torch.__version__})

    # Check pair: 4 held-out images, one per class, with every attention map.
    model.eval()
    pick = [int(np.flatnonzero(test_y == c)[0]) for c in range(4)]
    pick_labels = [float(test_y[i]) for i in pick]
    maps = {}
    with torch.no_grad():
        logits = model(test_x[pick], maps)
    tc.save_check_pair(os.path.join(tc.WEIGHTS, "attention_shapes_check"),
                       input=test_x[pick], logits=logits,
                       labels=torch.tensor(pick_labels, dtype=torch.float32), **maps)

    # Held-out images for the samples, with labels, boxes and the model's answer.
    out_dir = os.path.join(tc.ASSETS, "synthetic")
    os.makedirs(out_dir, exist_ok=True)
    notes = {}
    with torch.no_grad():
        maps = {}
        pred = model(test_x[:12], maps).argmax(1)
        hit = peak_inside(maps["spatial_attention"], test_boxes[:12])
    for i in range(12):
        name = f"shape_{i:02d}.png"
        Image.fromarray(test_rgb[i]).save(os.path.join(out_dir, name))
        notes[name] = {"label": int(test_y[i]), "class": CLASSES[test_y[i]],
                       "box_xyxy": [int(v) for v in test_boxes[i]],
                       "prediction": int(pred[i]), "attention_peak_in_box": bool(hit[i])}
    with open(os.path.join(out_dir, "annotations.json"), "w") as f:
        json.dump({"classes": CLASSES, "images": notes}, f, indent=1, sort_keys=True)

    with open(os.path.join(tc.WEIGHTS, "attention_shapes_results.json"), "w") as f:
        json.dump({"test_accuracy": acc, "attention_peak_in_box": inside,
                   "mean_box_area_fraction": chance, "train_seconds": round(train_time, 1),
                   "train_cpu_seconds": round(train_cpu, 1),
                   "data_cpu_seconds": round(data_cpu, 1),
                   "epochs": EPOCHS, "train_images": TRAIN, "test_images": TEST,
                   "torch": torch.__version__, "torchvision": torchvision.__version__},
                  f, indent=1)


if __name__ == "__main__":
    main()
