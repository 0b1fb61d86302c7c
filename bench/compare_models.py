"""Whole timm networks: cvattn against PyTorch (eager, torch.no_grad, one thread), interleaved.

    /usr/bin/python3 bench/compare_models.py [--cvattn build/ci/tools/cvattn/cvattn]
        [--rounds 3] [--repeat 5] [--only seresnet18:1,seresnet18:8,vit_tiny_patch16_224:1]
        [--only byob]   (botnet26t_256, halonet26t, lambda_resnet26t at 256x256, batch 1)
    [--only issue20] (seresnet18, mobilenetv3_small_100, efficientnet_b0, vit_tiny_patch16_224,
                      swin_tiny_patch4_window7_224 at batch 1 and 8)
    [--peers ort]   (adds ONNX Runtime: npm install --prefix bench/ort, see bench/ort_peer.py)

For every model and batch size it builds timm's model from the source tree at /work/timm
(timm.create_model(name, pretrained=False).eval()), fills its state_dict with the seeded weights
of tests/fixtures/models.py, writes them as .safetensors and a [N, 3, 224, 224] input as .npy,
then
1. runs `cvattn run timm_model --set model_name=NAME ... --out output=...` once and checks the
   logits against timm's within 1e-4 * (1 + max|ref|) (a WRONG row has no speed figure);
2. alternates, for --rounds rounds, PyTorch (torch.set_num_threads(1), one warm-up call, median
   of --repeat calls) and `cvattn run timm_model ... --repeat R --threads 1` (its own median after
   loading). Per side the median over the rounds; the speed-up is the median of per-round ratios.
   --stat min takes each side's fastest call per round instead of the median.
With --peers ort each model is also exported with torch.onnx.export (opset 17, batch fixed) and
run by onnxruntime-node at one thread (bench/ort/run_ort.js): its logits are checked against
timm's with the same tolerance (a WRONG cell has no speed) and it is timed in the same rounds
(PyTorch, cvattn, ORT per round). Without onnxruntime-node the column is skipped with a note.
A model that this cvattn binary does not name (`cvattn list`) is skipped with a note.
The output is a markdown table. The machine may be shared: say so next to the figures.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

import ort_peer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "tests", "fixtures"))
sys.path.insert(0, "/work/timm")
import timm  # noqa: E402

from common import save_safetensors  # noqa: E402
from models import generated, randomise  # noqa: E402
from compare_torch import machine  # noqa: E402

DEFAULT = "seresnet18:1,seresnet18:8,resnet50:1,vit_tiny_patch16_224:1,vit_tiny_patch16_224:8"
# Named row sets for --only (an item may give the input size: name:batch:size).
PRESETS = {
    "byob": "botnet26t_256:1:256,halonet26t:1:256,lambda_resnet26t:1:256",
    "issue20": ",".join("%s:%d" % (m, b) for m in (
        "seresnet18", "mobilenetv3_small_100", "efficientnet_b0", "vit_tiny_patch16_224",
        "swin_tiny_patch4_window7_224") for b in (1, 8)),
}
# swin: Swin and ResNeSt rows (issue 20)
DEFAULT += ",swin_tiny_patch4_window7_224:1,swin_tiny_patch4_window7_224:8,resnest14d:1,resnest14d:8"


def listed_models(binary):
    """The model names `cvattn list` gives for timm_model (its model_name=REQUIRED(a|b|...))."""
    out = subprocess.run([binary, "list"], check=True, capture_output=True, text=True).stdout
    names = set()
    for line in out.splitlines():
        if line.startswith("timm_model"):
            m = re.search(r"model_name=REQUIRED\(([^)]*)\)", line)
            if m:
                names.update(m.group(1).split("|"))
    return names


def torch_time(model, x, repeat, stat="median"):
    with torch.no_grad():
        model(x)
        times = []
        for _ in range(repeat):
            t0 = time.perf_counter()
            model(x)
            times.append((time.perf_counter() - t0) * 1e3)
    return min(times) if stat == "min" else statistics.median(times)


def cvattn_time(cmd, repeat, stat="median"):
    out = subprocess.run(cmd + ["--repeat", str(repeat), "--threads", "1"], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out.strip().splitlines()[-1])[stat + "_ms"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cvattn", default=os.path.join(HERE, "..", "build", "ci", "tools", "cvattn",
                                                      "cvattn"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", default=DEFAULT)
    ap.add_argument("--peers", default="", help="'ort': add ONNX Runtime (onnxruntime-node)")
    ap.add_argument("--stat", choices=["median", "min"], default="median",
                    help="per-round figure of each side: the median of the calls or the fastest")
    args = ap.parse_args()
    torch.set_num_threads(1)
    use_ort = "ort" in args.peers.split(",")
    notes = []
    if use_ort and ort_peer.missing():
        notes.append("ONNX Runtime column skipped: %s." % ort_peer.missing())
        use_ort = False
    known = listed_models(args.cvattn)
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for item in PRESETS.get(args.only, args.only).split(","):
            name, batch, *size = item.split(":")
            batch = int(batch)
            size = int(size[0]) if size else 224
            if name not in known:
                notes.append("%s (batch %d) skipped: this cvattn binary does not name it "
                             "(`cvattn list`)." % (name, batch))
                continue
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
            ort_cmd, ort_cell = None, "n/a"
            if use_ort:
                onnx = os.path.join(tmp, "%s_%d_%d.onnx" % (name, batch, size))
                err = ort_peer.export(model, [x], onnx, ["input"])
                if err is None:
                    ort_cmd = ort_peer.command(onnx, {"input": inp})
                    err = ort_peer.check(ort_cmd, ref, os.path.join(tmp, "ort_out.npy"), tol)
                    if err:
                        ort_cmd, ort_cell = None, "WRONG"
                        notes.append("%s (batch %d): ONNX Runtime %s." % (name, batch, err))
                else:
                    ort_cell = "export failed"
                    notes.append("%s (batch %d): torch.onnx.export failed: %s." % (name, batch,
                                                                                   err))
            if not ok:
                rows.append((name, batch, "", "WRONG", ort_cell, ort_cell, "", ""))
                continue
            pt, cv, ort, ort_wall, ratio, ort_ratio = [], [], [], [], [], []
            for _ in range(args.rounds):
                p = torch_time(model, x, args.repeat, args.stat)
                c = cvattn_time(cmd, args.repeat, args.stat)
                pt.append(p)
                cv.append(c)
                ratio.append(p / c)
                if ort_cmd:
                    try:
                        o, w = ort_peer.times(ort_peer.run(ort_cmd, args.repeat), args.stat)
                    except RuntimeError as e:  # a failing ORT run loses its cell, not the row
                        notes.append("%s (batch %d): ONNX Runtime failed: %s." % (name, batch, e))
                        ort_cmd, ort_cell, ort, ort_wall, ort_ratio = None, "ERROR", [], [], []
                        continue
                    ort.append(o)
                    ort_wall.append(w)
                    ort_ratio.append(o / c)
            wall_cell = ort_cell
            if ort:
                ort_cell = "%.1f" % statistics.median(ort)
                wall_cell = "%.1f" % statistics.median(ort_wall)
            rows.append((name, batch, "%.1f" % statistics.median(pt),
                         "%.1f" % statistics.median(cv), ort_cell, wall_cell,
                         "%.2fx" % statistics.median(ratio),
                         "%.2fx" % statistics.median(ort_ratio) if ort_ratio else "n/a"))
            print(rows[-1], file=sys.stderr)
    if use_ort:
        print("Machine: %s; PyTorch %s (eager, no_grad), ONNX Runtime %s (onnxruntime-node, "
              "opset 17), cvattn; one thread each; %s of %d calls, median over %d "
              "interleaved rounds; speed-ups are medians of per-round ratios. ORT ms is ONNX "
              "Runtime's own time per run (its profiler), ORT via Node the wall time of "
              "session.run() in onnxruntime-node; cvattn vs ORT uses the former." %
              (machine(), torch.__version__, ort_peer.version(),
               "minimum" if args.stat == "min" else "medians", args.repeat, args.rounds))
        print()
        print("| model | batch | PyTorch ms | cvattn ms | ORT ms | ORT via Node ms | "
              "cvattn vs PyTorch | cvattn vs ORT |")
        print("|---|---|---|---|---|---|---|---|")
        for r in rows:
            print("| %s | %d | %s | %s | %s | %s | %s | %s |" % r)
    else:
        print("Machine: %s; PyTorch %s (eager, no_grad) and cvattn, one thread each." %
              (machine(), torch.__version__))
        print()
        print("| model | batch | cvattn ms | PyTorch ms | speed-up |")
        print("|---|---|---|---|---|")
        for r in rows:
            print("| %s | %d | %s | %s | %s |" % (r[0], r[1], r[3], r[2], r[6]))
    for n in notes:
        print()
        print(n)

if __name__ == "__main__":
    main()
