"""ONNX Runtime as a peer for bench/compare_models.py and bench/compare_torch.py (--peers ort).

A model is exported with torch.onnx.export (opset 17 unless said otherwise, fixed shapes) and run
by bench/ort/run_ort.js under Node with onnxruntime-node (CPU, one intra-op and one inter-op
thread, graph optimisation 'all', sequential execution). Install once:

    npm install --prefix bench/ort
"""
import json
import os
import shutil
import subprocess
import warnings

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
RUNNER = os.path.join(HERE, "ort", "run_ort.js")
PACKAGE = os.path.join(HERE, "ort", "node_modules", "onnxruntime-node", "package.json")


def missing():
    """None when node and onnxruntime-node are there, else the reason ORT cannot run."""
    if shutil.which("node") is None:
        return "node is not on PATH"
    if not os.path.exists(PACKAGE):
        return "onnxruntime-node is not installed (npm install --prefix bench/ort)"
    return None


def version():
    try:
        with open(PACKAGE) as f:
            return json.load(f)["version"]
    except (OSError, ValueError, KeyError):
        return "unknown"


def export(module, inputs, path, input_names, opset=17):
    """Export module(*inputs) to path with the given input names and one output "output".
    Returns None on success, else the reason the export failed (one line)."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            torch.onnx.export(module, tuple(inputs), path, opset_version=opset,
                              input_names=list(input_names), output_names=["output"],
                              do_constant_folding=True)
    except Exception as e:  # noqa: BLE001 - any export failure becomes the row's note
        return ("%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0]
                            if str(e).strip() else "")).replace("|", "/")[:160]
    return None


def command(onnx_path, feeds):
    """The run_ort.js command line for feeds: graph input name -> .npy path."""
    cmd = ["node", RUNNER, "--model", onnx_path]
    for name, file in feeds.items():
        cmd += ["--in", "%s=%s" % (name, file)]
    return cmd


def run(cmd, repeat, out=None):
    """Runs the model: returns run_ort.js's JSON ({median_ms, min_ms, runs, cpu_ms,
    session_median_ms, session_min_ms}); raises
    RuntimeError with its message when it fails."""
    args = cmd + ["--repeat", str(repeat)] + (["--out", out] if out else [])
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip().splitlines()[-1] if res.stderr.strip()
                           else "run_ort.js exit %d" % res.returncode)
    return json.loads(res.stdout.strip().splitlines()[-1])


def times(result, stat="median"):
    """(ORT's own time per run from its profiler, the wall time of session.run() seen from JS)
    in ms, each the median or the minimum (stat) of the timed runs. The comparison uses the
    first: onnxruntime-node's conversion of feeds and fetches is the binding's cost."""
    wall = result[stat + "_ms"]
    own = result.get("session_%s_ms" % stat)
    return (wall if own is None else own), wall


def check(cmd, ref, out, tol):
    """Runs once writing the first output to out; None when it matches ref within tol
    (a number, or an array like ref), else what is wrong."""
    try:
        run(cmd, 1, out)
    except RuntimeError as e:
        return "error: " + str(e)
    return compare(out, ref, tol)


def compare(out, ref, tol):
    """None when the .npy file out matches ref within tol (a number, or an array like ref), else
    what is wrong (also bench/ncnn_peer.py's check)."""
    got = np.load(out)
    if got.shape != ref.shape:
        return "shape %s, PyTorch %s" % (list(got.shape), list(ref.shape))
    excess = np.abs(got - ref) - tol
    if not np.all(excess <= 0):
        i = np.unravel_index(np.argmax(excess), ref.shape)
        return "differs at %s: %g vs %g" % (list(i), got[i], ref[i])
    return None
