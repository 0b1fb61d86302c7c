"""ONNX export of F.affine_grid and torchvision.ops.deform_conv2d for PyTorch 1.13, into models
that cv::dnn (OpenCV 4.6) runs with cvattn's custom layers (docs/dnn.md).

PyTorch 1.13 has no ONNX symbolic for aten::affine_grid_generator (ONNX's AffineGrid is opset 20;
torch 1.13 exports opsets <= 17) nor for torchvision::deform_conv2d (ONNX DeformConv is opset
19). `register()` adds both, emitting the standard ONNX ops in the default domain:

  AffineGrid(theta, size)              align_corners       (2-D and 3-D: size of 4 or 5 entries)
  DeformConv(X, W, offset, B[, mask])  strides, pads, dilations, group, offset_group

OpenCV's importer routes a default-domain node by its op_type whatever the declared opset, so
the model keeps opset 16 (where torch exports GridSample natively). The ONNX checker torch runs
after writing the file then fails ("No Op registered for AffineGrid with domain_version of 16"),
and torch raises (onnx's ValidationError, unwrapped, in 1.13; CheckerError in later versions)
although the file is complete. `export()` catches exactly that,
then checks the written model itself: every node except AffineGrid/DeformConv must pass
onnx.checker (with python3-onnx installed), so a real error elsewhere is still reported.

Usage (see docs/dnn.md for complete STN and DCN examples):

    import onnx_export                      # this file, e.g. sys.path.insert(0, "tools")
    onnx_export.export(model, (x,), "stn.onnx", input_names=["X"], output_names=["Y"],
                       dynamic_axes={"X": {0: "batch"}, "Y": {0: "batch"}})

or, with torch.onnx.export directly: `onnx_export.register()` first, and catch
the checker's "No Op registered for AffineGrid / DeformConv" exception (then call
`check("stn.onnx")`).
"""
import torch
import torch.onnx
from torch.onnx import symbolic_helper

OPSET = 16
CUSTOM_OPS = ("AffineGrid", "DeformConv")  # default-domain ops newer than OPSET


def _size_tensor(g, size):
    """affine_grid's size (an int list, constant or built from Shape(x) under dynamic axes) as a
    1-D int64 tensor."""
    const = symbolic_helper._maybe_get_const(size, "is")
    if not symbolic_helper._is_value(const):
        return g.op("Constant", value_t=torch.tensor(const, dtype=torch.int64))
    if symbolic_helper._is_packed_list(size):
        parts = []
        for v in symbolic_helper._unpack_list(size):
            c = symbolic_helper._maybe_get_const(v, "i")
            if symbolic_helper._is_value(c):
                v = g.op("Cast", v, to_i=7)  # INT64
                parts.append(symbolic_helper._unsqueeze_helper(g, v, [0]))
            else:
                parts.append(g.op("Constant", value_t=torch.tensor([c], dtype=torch.int64)))
        return g.op("Concat", *parts, axis_i=0)
    return g.op("Cast", size, to_i=7)


@symbolic_helper.parse_args("v", "v", "b")
def affine_grid_symbolic(g, theta, size, align_corners):
    return g.op("AffineGrid", theta, _size_tensor(g, size), align_corners_i=int(align_corners))


@symbolic_helper.parse_args("v", "v", "v", "v", "v", "i", "i", "i", "i", "i", "i", "i", "i", "b")
def deform_conv2d_symbolic(g, x, weight, offset, mask, bias, stride_h, stride_w, pad_h, pad_w,
                           dil_h, dil_w, n_weight_grps, n_offset_grps, use_mask):
    inputs = [x, weight, offset, bias] + ([mask] if use_mask else [])
    return g.op("DeformConv", *inputs, strides_i=[stride_h, stride_w],
                pads_i=[pad_h, pad_w, pad_h, pad_w], dilations_i=[dil_h, dil_w],
                group_i=n_weight_grps, offset_group_i=n_offset_grps)


_registered = False


def register(opset=OPSET):
    """Registers the two symbolics for opsets `opset`..17 (idempotent)."""
    global _registered
    if _registered:
        return
    import torchvision  # noqa: F401  (loads the torchvision:: ops)
    for version in range(opset, 18):
        torch.onnx.register_custom_op_symbolic("::affine_grid_generator", affine_grid_symbolic,
                                               version)
        torch.onnx.register_custom_op_symbolic("torchvision::deform_conv2d",
                                               deform_conv2d_symbolic, version)
    _registered = True


def check(path):
    """onnx.checker on the model at `path` with the AffineGrid/DeformConv nodes moved to a
    private domain (which the checker leaves alone): everything else must be valid ONNX.
    Returns False when python3-onnx is not installed (nothing checked)."""
    try:
        import onnx
    except ImportError:
        return False
    model = onnx.load(path)
    domain = "cvattn.unchecked"
    for node in model.graph.node:
        if node.domain in ("", "ai.onnx") and node.op_type in CUSTOM_OPS:
            node.domain = domain
    model.opset_import.append(onnx.helper.make_opsetid(domain, 1))
    onnx.checker.check_model(model)
    return True


def export(model, args, path, opset_version=OPSET, **kwargs):
    """torch.onnx.export with the symbolics registered and the checker's rejection of the two
    newer ops handled (any other checker error is raised)."""
    register(opset_version)
    try:
        torch.onnx.export(model, args, path, opset_version=opset_version, **kwargs)
    except Exception as e:  # torch 1.13 lets onnx's ValidationError through unwrapped
        if not any(f"No Op registered for {op} " in str(e) for op in CUSTOM_OPS):
            raise
    check(path)
    return path
