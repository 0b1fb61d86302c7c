"""Whole timm networks: cvattn against PyTorch (eager, torch.no_grad, one thread), interleaved.

    /usr/bin/python3 bench/compare_models.py [--cvattn build/ci/tools/cvattn/cvattn]
        [--rounds 3] [--repeat 5] [--only seresnet18:1,seresnet18:8,vit_tiny_patch16_224:1]
        [--only byob]   (botnet26t_256, halonet26t, lambda_resnet26t at 256x256, batch 1)

For every model and batch size it builds timm's model from the source tree at /work/timm
(timm.create_model(name, pretrained=False).eval()), fills its state_dict with the seeded weights
of tests/fixtures/models.py, writes them as .safetensors and a [N, 3, 224, 224] input as .npy,
then
1. runs `cvattn run timm_model --set model_name=NAME ... --out output=...` once and checks the
   logits against timm's within 1e-4 * (1 + max|ref|) (a WRONG row has no speed figure);
2. alternates, for --rounds rounds, PyTorch (torch.set_num_threads(1), one warm-up call, median
   of --repeat calls) and `cvattn run timm_model ... --repeat R --threads 1` (its own median after
   loading). Per side the median over the rounds; the speed-up is the median of per-round ratios.
The output is a markdown table. The machine may be shared: say so next to the figures.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
sys.path.insert(0, "/work/timm")
import timm  # noqa: E402

from common import save_safetensors  # noqa: E402
from models import generated, randomise  # noqa: E402

DEFAULT = "seresnet18:1,seresnet18:8,resnet50:1,vit_tiny_patch16_224:1,vit_tiny_patch16_224:8"
# Named row sets for --only (an item may give the input size: name:batch:size).
PRESETS = {
    "byob": "botnet26t_256:1:256,halonet26t:1:256,lambda_resnet26t:1:256",
}
# swin: Swin and ResNeSt rows (issue 20)
DEFAULT += ",swin_tiny_patch4_window7_224:1,swin_tiny_patch4_window7_224:8,resnest14d:1,resnest14d:8"


def torch_time(model, x, repeat):
    with torch.no_grad():
        model(x)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def cvattn_time(cmd, repeat):
    out = subprocess.run(cmd + ["--repeat", str(repeat), "--threads", "1"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])["median_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cvattn", default=os.path.join(HERE, "..", "build", "ci", "tools", "cvattn",
                                                      "cvattn"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=DEFAULT)
    args = ap.parse_args()
    torch.set_num_threads(1)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in PRESETS.get(args.only, args.only).split(","):
            name, batch, *size = item.split(":")
            batch = int(batch)
            size = int(size[0]) if size else 224
            model = timm.create_model(name, pretrained=False).eval()
            randomise(model, 7)
            x = torch.from_numpy(generated("input", (batch, 3, size, size), 7))
            weights = os.path.join(tmp, name + ".safetensors")
            save_safetensors(model.state_dict(), weights)
            inp = os.path.join(tmp, "x%d_%d.npy" % (batch, size))
            np.save(inp, x.numpy())
            out = os.path.join(tmp, "out.npy")
            cmd = [args.cvattn, "run", "timm_model", "--set", "model_name=" + name, "--in",
                   "input=" + inp, "--weights", weights]
            subprocess.run(cmd + ["--out", "output=" + out], check=True)
            with torch.no_grad():
                ref = model(x).numpy()
            got = np.load(out)
            tol = 1e-4 * (1 + np.abs(ref).max())
            ok = got.shape == ref.shape and np.abs(got - ref).max() <= tol
            if not ok:
                rows.append((name, batch, "WRONG", "", ""))
                continue
            pt, cv, ratio = [], [], []
            for _ in range(args.rounds):
                p = torch_time(model, x, args.repeat)
                c = cvattn_time(cmd, args.repeat)
                pt.append(p)
                cv.append(c)
                ratio.append(p / c)
            rows.append((name, batch, "%.1f" % statistics.median(cv),
                         "%.1f" % statistics.median(pt), "%.2fx" % statistics.median(ratio)))
            print(rows[-1], file=sys.stderr)
    print("| model | batch | cvattn ms | PyTorch ms | speed-up |")
    print("|---|---|---|---|---|")
    for r in rows:
        print("| %s | %d | %s | %s | %s |" % r)


if __name__ == "__main__":
    main()
