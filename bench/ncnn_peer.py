"""ncnn as a peer for bench/compare_torch.py (--peers ncnn).

A row whose op ncnn has a layer for is run by bench/ncnn/ncnn_peer, a harness that builds that
layer (or, for SE, a few layers) with ncnn's layer API and times it on the row's .npy inputs: one
thread, fp32 (no fp16, bf16 or int8), packed layout unless --packing 0, and the conversion of the
NCHW input to the packed layout and of the output back inside the timed call. Build it once
(ncnn from source, static, only the layers it uses):

    git clone /work/.mirror/Tencent+ncnn/repo /work/ncnn   # or any ncnn checkout
    bench/ncnn/build.sh [NCNN_SRC] [BUILD_DIR]

NCNN_PEER in the environment names a harness built elsewhere (BUILD_DIR/ncnn_peer).
"""
import json
import os
import subprocess

import numpy as np
import torch.nn as nn

import ort_peer  # the shared output comparison

HERE = os.path.dirname(os.path.abspath(__file__))
BINARY = os.environ.get("NCNN_PEER") or os.path.join(HERE, "ncnn", "build", "ncnn_peer")


def missing():
    """None when the harness is built, else the reason ncnn cannot run."""
    if not os.path.exists(BINARY):
        return "the ncnn harness %s is not built (bench/ncnn/build.sh)" % _shown(BINARY)
    if not os.access(BINARY, os.X_OK):
        return "%s is not executable" % _shown(BINARY)
    return None


def _shown(path):
    """path relative to the repository when it is inside it, else as given."""
    root = os.path.dirname(HERE)
    return os.path.relpath(path, root) if path.startswith(root + os.sep) else path


def version():
    """The ncnn commit the harness was built from (build.sh writes it beside the binary)."""
    try:
        with open(os.path.join(os.path.dirname(BINARY), "ncnn_commit.txt")) as f:
            return f.read().strip() or "unknown commit"
    except OSError:
        return "unknown commit"


def _sets(case, allowed):
    """The row's cvattn settings as harness --set arguments, or None when one has no ncnn
    counterpart here (the row then is not the same computation)."""
    if any(k not in allowed for k in case.sets):
        return None
    args = []
    for key, value in case.sets.items():
        args += ["--set", "%s=%s" % (allowed[key], value)]
    return args


def command(case, folder):
    """The ncnn_peer command line for a compare_torch row whose inputs compare_torch saved in
    folder (input.npy, ...), after writing what else the harness reads there (SE's fc weights
    as ncnn_fc*.npy); None when ncnn has no layer for the row."""
    if case.op in ("conv2d", "deform_conv2d"):
        sets = _sets(case, {"padding": "pad"})
    elif case.op == "grid_sample":
        sets = _sets(case, {"mode": "mode", "padding_mode": "padding_mode",
                            "align_corners": "align_corners"})
    elif case.op == "se":
        m = case.module
        # InnerProduct(ReLU), InnerProduct(sigmoid): the SE block without a norm or max pool.
        if m is None or m.add_maxpool or not isinstance(m.bn, nn.Identity) or \
                m.fc1.bias is None or getattr(m.gate, "__name__", "") != "sigmoid":
            return None
        for name in ("fc1", "fc2"):
            conv = getattr(m, name)
            w = conv.weight.detach().numpy()
            np.save(os.path.join(folder, "ncnn_%s_weight.npy" % name),
                    np.ascontiguousarray(w.reshape(w.shape[0], -1), dtype=np.float32))
            np.save(os.path.join(folder, "ncnn_%s_bias.npy" % name),
                    np.ascontiguousarray(conv.bias.detach().numpy(), dtype=np.float32))
        sets = []
    else:
        return None
    if sets is None:
        return None
    return [BINARY, "--op", case.op, "--dir", folder] + sets


def run(cmd, repeat, out=None):
    """Runs the op: returns ncnn_peer's JSON ({median_ms, min_ms, runs, elempack, isa}); raises
    RuntimeError with its message when it fails."""
    args = cmd + ["--repeat", str(repeat)] + (["--out", out] if out else [])
    res = subprocess.run(args, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(res.stderr.strip().splitlines()[-1] if res.stderr.strip()
                           else "ncnn_peer exit %d" % res.returncode)
    return json.loads(res.stdout.strip().splitlines()[-1])


def times(result, stat="median"):
    """ncnn's time per call in ms, the median or the minimum (stat) of the timed calls."""
    return result[stat + "_ms"]


def check(cmd, ref, out, tol):
    """Runs once writing the output to out; None when it matches ref within tol (a number, or
    an array like ref), else what is wrong."""
    try:
        run(cmd, 1, out)
    except RuntimeError as e:
        return "error: " + str(e)
    return ort_peer.compare(out, ref, tol)
