"""Writes the seed corpora in tests/fuzz/corpus/<target>/ (plain python3, no torch needed).

Seeds are valid files copied from the test fixtures plus small hand-made edge cases; libFuzzer
mutates from there. Rerun after changing a harness's expectations; commit the result.
"""
import json
import os
import shutil
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "fixtures")
CORPUS = os.path.join(HERE, "corpus")


def npy(shape, values=None, descr="<f4", version=1, fortran=False, raw_header=None):
    n = 1
    for d in shape:
        n *= d
    shape_text = "(" + "".join(f"{d}, " for d in shape).rstrip(" ")
    if len(shape) > 1:
        shape_text = shape_text.rstrip(",")
    shape_text += ")"
    header = raw_header or f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_text}, }}"
    prefix = 10 if version == 1 else 12
    total = prefix + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    out = b"\x93NUMPY" + bytes([version, 0])
    out += struct.pack("<H" if version == 1 else "<I", len(header)) + header.encode("latin-1")
    if values is None:
        values = [0.5 * i for i in range(n)]
    fmt = {"<f4": "<f", "<f8": "<d"}.get(descr, "<f")
    out += b"".join(struct.pack(fmt, v) for v in values)
    return out


def safetensors(tensors, metadata=None, raw_header=None):
    """tensors: list of (name, dtype, shape, bytes)."""
    header, data = {}, b""
    for name, dtype, shape, raw in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(raw)]}
        data += raw
    if metadata is not None:
        header["__metadata__"] = metadata
    text = (raw_header if raw_header is not None else json.dumps(header)).encode()
    return struct.pack("<Q", len(text)) + text + data


def f32(*values):
    return b"".join(struct.pack("<f", v) for v in values)


def f32n(n, start=0.0):
    return f32(*[start + 0.125 * i for i in range(n)])


def write(target, name, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data if isinstance(data, bytes) else data.encode())


def main():
    shutil.rmtree(CORPUS, ignore_errors=True)

    # --- fuzz_npy: every fixture .npy, then edge cases.
    for folder in ["io/npy", "io/safetensors", "cli/conv2d_0"]:
        src = os.path.join(FIXTURES, folder)
        for f in sorted(os.listdir(src)):
            if f.endswith(".npy"):
                with open(os.path.join(src, f), "rb") as fh:
                    write("fuzz_npy", folder.replace("/", "_") + "_" + f, fh.read())
    write("fuzz_npy", "v2_f64.npy", npy([2, 3], descr="<f8", version=2))
    write("fuzz_npy", "v3_rank6.npy", npy([1, 1, 2, 1, 2, 1], version=3))
    write("fuzz_npy", "zero_dim.npy", npy([0, 3]))
    write("fuzz_npy", "scalar.npy", npy([]))
    write("fuzz_npy", "rank7.npy", npy([1] * 7))
    write("fuzz_npy", "overflow.npy", npy([2**62, 8], values=[]))
    write("fuzz_npy", "over_cap.npy", npy([1 << 20, 1 << 10], values=[]))
    write("fuzz_npy", "fortran.npy", npy([2, 2], fortran=True))
    write("fuzz_npy", "int_dtype.npy", npy([2], descr="<i4"))
    write("fuzz_npy", "dup_key.npy", npy([1], raw_header="{'descr': '<f4', 'descr': '<f4', "
                                                         "'fortran_order': False, 'shape': (1,), }"))
    write("fuzz_npy", "header_only.npy", npy([4, 4])[:64])
    write("fuzz_npy", "huge_header_len.npy", b"\x93NUMPY\x02\x00\xff\xff\xff\x7f{}")

    # --- fuzz_safetensors
    with open(os.path.join(FIXTURES, "io/safetensors/weights.safetensors"), "rb") as fh:
        write("fuzz_safetensors", "torch_every_dtype.safetensors", fh.read())
    write("fuzz_safetensors", "empty.safetensors", safetensors([]))
    write("fuzz_safetensors", "metadata.safetensors",
          safetensors([("w", "F32", [2, 2], f32n(4))], metadata={"format": "pt"}))
    write("fuzz_safetensors", "dtypes.safetensors", safetensors([
        ("a", "F16", [2], b"\x00\x3c\x00\xc0"), ("b", "BF16", [1], b"\x80\x3f"),
        ("c", "F64", [1], struct.pack("<d", 1e300)), ("d", "I64", [], struct.pack("<q", 17)),
        ("e", "I32", [1], struct.pack("<i", -5)), ("f", "I16", [1], struct.pack("<h", 3)),
        ("g", "I8", [1], b"\xff"), ("h", "U8", [1], b"\xff"), ("i", "BOOL", [1], b"\x01")]))
    write("fuzz_safetensors", "zero_size.safetensors", safetensors([("z", "F32", [0, 3], b"")]))
    write("fuzz_safetensors", "overlap.safetensors", safetensors([], raw_header=json.dumps({
        "a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]},
        "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}})) + f32n(3))
    write("fuzz_safetensors", "duplicate.safetensors", safetensors([], raw_header=(
        '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
        '"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}')) + f32n(2))
    write("fuzz_safetensors", "past_end.safetensors", safetensors([], raw_header=json.dumps({
        "a": {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}})) + f32n(2))
    write("fuzz_safetensors", "overflow_shape.safetensors", safetensors([], raw_header=json.dumps({
        "a": {"dtype": "F32", "shape": [2**40, 2**40], "data_offsets": [0, 0]}})))
    write("fuzz_safetensors", "header_len_huge.safetensors", struct.pack("<Q", 2**63) + b"{}")

    # --- fuzz_state_dict: the harness's Net keys.
    def bn(prefix, c):
        return [(prefix + "weight", "F32", [c], f32n(c, 1)), (prefix + "bias", "F32", [c], f32n(c)),
                (prefix + "running_mean", "F32", [c], f32n(c)),
                (prefix + "running_var", "F32", [c], f32n(c, 1)),
                (prefix + "num_batches_tracked", "I64", [], struct.pack("<q", 7))]
    net = ([("conv.weight", "F32", [4, 2, 3, 3], f32n(72)), ("conv.bias", "F32", [4], f32n(4))]
           + bn("bn.", 4) + [("head.0.weight", "F32", [3, 4, 1, 1], f32n(12))] + bn("head.1.", 3)
           + [("scale", "F32", [1, 4, 1, 1], f32n(4))])
    write("fuzz_state_dict", "net.safetensors", safetensors(net))
    write("fuzz_state_dict", "net_no_nbt.safetensors",
          safetensors([t for t in net if "num_batches" not in t[0]]))
    write("fuzz_state_dict", "net_missing.safetensors", safetensors(net[1:]))
    write("fuzz_state_dict", "net_unexpected.safetensors",
          safetensors(net + [("conv.extra", "F32", [1], f32n(1))]))
    write("fuzz_state_dict", "net_bad_shape.safetensors",
          safetensors([("conv.weight", "F32", [4, 2, 3, 2], f32n(48))] + net[1:]))
    write("fuzz_state_dict", "net_int_weight.safetensors",
          safetensors([("conv.bias", "I64", [4], struct.pack("<4q", 1, 2, 3, 4))] +
                      [t for t in net if t[0] != "conv.bias"]))
    nan = struct.pack("<f", float("nan")) * 72
    write("fuzz_state_dict", "net_nan.safetensors",
          safetensors([("conv.weight", "F32", [4, 2, 3, 3], nan)] + net[1:]))
    write("fuzz_state_dict", "net_f16.safetensors", safetensors(
        [("conv.weight", "F16", [4, 2, 3, 3], b"\x00\x3c" * 72)] + net[1:]))
    write("fuzz_state_dict", "head_only.safetensors",
          safetensors([t for t in net if t[0].startswith("head.")]))

    # --- fuzz_cli_args: argv joined by '\n'; files come from the harness's in-memory table.
    base = ["run", "conv2d", "--in", "input=x.npy", "--in", "weight=w.npy"]
    cli = {
        "help": ["--help"], "version": ["--version"], "list": ["list"], "info": ["info"],
        "run_help": ["run", "--help"], "op_help": ["run", "conv2d", "--help"],
        "conv_groups2": base + ["--set", "groups=2"],
        "conv_bias": base + ["--in", "bias=b.npy", "--set", "groups=2", "--set", "stride=2,1",
                             "--set", "padding=1", "--set", "dilation=1,2"],
        "conv_inline": ["run", "conv2d", "--in=input=x.npy", "--in=weight=w1.npy",
                        "--out=output=o.npy", "--repeat=2", "--threads=1"],
        "conv_depthwise": ["run", "conv2d", "--in", "input=x.npy", "--in", "weight=dw.npy",
                           "--set", "groups=4", "--set", "padding=2,0"],
        "conv_empty_batch": ["run", "conv2d", "--in", "input=e.npy", "--in", "weight=w1.npy"],
        "conv_unbatched": ["run", "conv2d", "--in", "input=x3.npy", "--in", "weight=w1.npy"],
        "conv_scalar": ["run", "conv2d", "--in", "input=s.npy", "--in", "weight=w1.npy"],
        "conv_junk": ["run", "conv2d", "--in", "input=junk.npy", "--in", "weight=w1.npy"],
        "conv_missing_file": ["run", "conv2d", "--in", "input=nope.npy", "--in", "weight=w1.npy"],
        "conv_weights": base + ["--weights", "w.safetensors"],
        "conv_bad_setting": base + ["--set", "stride=0", "--set", "padding=-1"],
        "conv_huge_padding": base + ["--set", "groups=2", "--set", "padding=1000000000"],
        "conv_mismatch": ["run", "conv2d", "--in", "input=x.npy", "--in", "weight=w.npy"],
        "unknown": ["frobnicate"], "run_unknown": ["run", "nosuchop"],
    }
    for name, args in cli.items():
        write("fuzz_cli_args", name + ".txt", "\n".join(args))


if __name__ == "__main__":
    main()
