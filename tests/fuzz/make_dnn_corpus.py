"""Seeds for fuzz_dnn_layers: structured inputs in the harness's byte format (valid layer
configurations of every type and alias, then byte-flipped mutants of them), so that replaying
the corpus reaches getMemoryShapes and forward, not only attribute parsing.

    python3 tests/fuzz/make_dnn_corpus.py [--mutants N] [--out DIR]

The committed corpus (tests/fuzz/corpus/fuzz_dnn_layers) is the default run: the seeds plus 200
mutants. A larger --mutants run into a scratch folder is a cheap fuzz without libFuzzer:
    python3 tests/fuzz/make_dnn_corpus.py --mutants 20000 --out /tmp/dnn_corpus
    build/ci/tests/fuzz/fuzz_dnn_layers /tmp/dnn_corpus
"""
import argparse
import os
import random
import shutil

TYPES = ["GridSample", "AffineGrid", "DeformConv", "com.microsoft.GridSample",
         "mmcv.grid_sampler", "mmcv.MMCVModulatedDeformConv2d", "mmcv.MMCVDeformConv2d"]
INT_KEYS = ["align_corners", "group", "offset_group", "groups", "deform_groups",
            "interpolation_mode", "padding_mode", "bias", "im2col_step"]
LIST_KEYS = ["stride", "strides", "pad", "pads", "dilation", "dilations", "kernel_size",
             "kernel_shape", "padding"]
STRING_KEYS = ["mode", "padding_mode", "group", "stride"]
WORDS = ["bilinear", "linear", "nearest", "bicubic", "cubic", "zeros", "border", "reflection",
         "trilinear", "", "2"]


def value(v):
    """Bytes that the harness's Bytes::value() reads back as v (0, -1..-4, 1..5)."""
    if v == 0:
        return [0]
    if -4 <= v < 0:
        return [1, -v - 1]
    assert 1 <= v <= 5, v
    return [4, v - 1]


def shape(dims):
    out = [len(dims)]
    for d in dims:
        if 0 <= d <= 6:
            out += [0, d]
        else:  # the harness's "odd" path: Bytes::value() of kind 2 is 1 << k
            k = d.bit_length() - 1
            assert d == 1 << k, d
            out += [7, 2, k]
    return out


def layer(rng, type_name, ints=(), lists=(), strings=(), blobs=(), inputs=()):
    b = [TYPES.index(type_name)]
    attrs = [(0, k, v) for k, v in ints] + [(1, k, v) for k, v in lists] + \
            [(2, k, v) for k, v in strings]
    b.append(len(attrs))
    for kind, key, v in attrs:
        b.append(kind)  # then the key, then the value
        if kind == 0:
            b += [INT_KEYS.index(key)] + value(v)
        elif kind == 1:
            b += [LIST_KEYS.index(key), len(v)] + sum((value(x) for x in v), [])
        else:
            b += [STRING_KEYS.index(key), WORDS.index(v)]
    b.append(len(blobs))
    for dims, is_int, data in blobs:
        b += shape(dims) + [0 if is_int else 1]
        b += sum((value(x) for x in data), []) if is_int else data
    b.append(len(inputs))
    for dims in inputs:
        b += shape(dims)
    b += [rng.randrange(256) for _ in range(300)]  # tensor data
    return bytes(x % 256 for x in b)


def seeds(rng):
    out = []
    for t in ("GridSample", "com.microsoft.GridSample"):
        for mode in ("bilinear", "linear", "nearest", "bicubic", "cubic", "trilinear"):
            for pad in ("zeros", "border", "reflection"):
                out.append(layer(rng, t, ints=[("align_corners", rng.randrange(2))],
                                 strings=[("mode", mode), ("padding_mode", pad)],
                                 inputs=[(2, 3, 4, 5), (2, 3, 2, 2)]))
        out.append(layer(rng, t, strings=[("mode", "linear")],
                         inputs=[(1, 2, 3, 4, 5), (1, 2, 2, 3, 3)]))
        out.append(layer(rng, t, strings=[("mode", "cubic")],
                         inputs=[(1, 2, 3, 4, 5), (1, 2, 2, 3, 3)]))
    for m in range(4):
        out.append(layer(rng, "mmcv.grid_sampler", ints=[("interpolation_mode", m),
                                                         ("padding_mode", m % 3)],
                         inputs=[(1, 2, 5, 4), (1, 3, 2, 2)]))
    for ac in (0, 1, 2):
        out.append(layer(rng, "AffineGrid", ints=[("align_corners", ac)],
                         blobs=[((4,), True, [2, 1, 3, 4])], inputs=[(2, 2, 3)]))
        out.append(layer(rng, "AffineGrid", ints=[("align_corners", ac)],
                         blobs=[((5,), True, [1, 1, 2, 3, 4])], inputs=[(3, 3, 4)]))
        out.append(layer(rng, "AffineGrid", blobs=[((4,), True, [1, 1, -2, 4])],
                         inputs=[(1, 2, 3)]))
    w = [rng.randrange(256) for _ in range(3 * 2 * 2 * 2)]
    for pads in ([0, 0, 0, 0], [1, 0, 0, 1], [1, 1, 1, 1], [-1, 0, 0, 0], [2, 1]):
        for group, og in ((1, 1), (1, 2), (0, 1), (2, 1)):
            out.append(layer(rng, "DeformConv", ints=[("group", group), ("offset_group", og)],
                             lists=[("pads", pads), ("strides", [1, 1])],
                             blobs=[((3, 2, 2, 2), False, w)],
                             inputs=[(1, 2, 4, 5), (1, 8 * og, 3, 4), (1, 4 * og, 3, 4)]))
    for t in ("mmcv.MMCVModulatedDeformConv2d", "mmcv.MMCVDeformConv2d"):
        for padding in ([0, 0], [1, 1], [1], [1, 2, 3]):
            out.append(layer(rng, t, ints=[("groups", 1), ("deform_groups", 1)],
                             lists=[("padding", padding), ("stride", [1, 1])],
                             blobs=[((3, 2, 2, 2), False, w)],
                             inputs=[(1, 2, 4, 5), (1, 8, 3, 4), (1, 4, 3, 4)]))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mutants", type=int, default=200)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                  "corpus", "fuzz_dnn_layers"))
    args = ap.parse_args()
    rng = random.Random(21)
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    base = seeds(rng)
    for i, s in enumerate(base):
        with open(os.path.join(args.out, f"seed_{i:03d}"), "wb") as f:
            f.write(s)
    for i in range(args.mutants):
        s = bytearray(rng.choice(base))
        for _ in range(rng.randrange(1, 6)):
            s[rng.randrange(min(len(s), 80))] = rng.randrange(256)
        with open(os.path.join(args.out, f"mutant_{i:05d}"), "wb") as f:
            f.write(bytes(s))
    print(f"{len(base)} seeds, {args.mutants} mutants -> {args.out}")


if __name__ == "__main__":
    main()
