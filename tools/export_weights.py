#!/usr/bin/env python3
"""Convert a PyTorch checkpoint (.pt / .pth) into a .safetensors file that cvattn loads.

    python3 tools/export_weights.py model.pth model.safetensors
    python3 tools/export_weights.py ckpt.pt out.safetensors --key model --strip-prefix module.

The input may be
  * a plain state_dict (what torch.save(model.state_dict(), path) writes),
  * a training checkpoint: a dict holding the state_dict under 'state_dict', 'model',
    'model_state_dict', 'module', 'net' or 'ema' (or the key given with --key),
  * a whole pickled nn.Module (torch.save(model, path)); its class must be importable,
  * a TorchScript archive (torch.jit.save).
Either of torch.save's formats (the zip archive of PyTorch >= 1.6, or the legacy pickle) is read.

Only torch is needed: the .safetensors format (an 8-byte little-endian header length, a JSON
header naming each tensor's dtype, shape and byte range, then the raw little-endian data) is
written here directly, with the same layout safetensors.torch.save_file produces. Floating
tensors are written as F32 unless --keep-dtype is given (cvattn converts F16, BF16 and F64 on
load anyway); integer tensors (BatchNorm's num_batches_tracked) keep their integer dtype.
Tensors that share storage are written as separate copies (safetensors has no aliasing).

Unpickling runs code from the file: convert only checkpoints you trust.
"""
import argparse
import collections
import json
import os
import struct
import sys

_KNOWN_NESTED = ("state_dict", "model", "model_state_dict", "module", "net", "ema",
                 "model_ema", "state_dict_ema")


def _dtype_names(torch):
    return {
        torch.float32: "F32", torch.float16: "F16", torch.bfloat16: "BF16",
        torch.float64: "F64", torch.int64: "I64", torch.int32: "I32", torch.int16: "I16",
        torch.int8: "I8", torch.uint8: "U8", torch.bool: "BOOL",
    }


def load_checkpoint(torch, path):
    """torch.load on the CPU, falling back to TorchScript for jit archives."""
    try:
        try:
            # A whole pickled module needs full unpickling (torch >= 2.6 defaults to weights only).
            return torch.load(path, map_location="cpu", weights_only=False)
        except TypeError:  # torch < 1.13 has no weights_only
            return torch.load(path, map_location="cpu")
    except RuntimeError as e:
        # torch.load refuses TorchScript archives and points at torch.jit.load.
        if "torch.jit.load" not in str(e) and "TorchScript" not in str(e):
            raise
        return torch.jit.load(path, map_location="cpu")


def find_state_dict(torch, obj, key=None):
    """The name -> tensor mapping inside whatever torch.load returned, and where it was."""
    if hasattr(obj, "state_dict") and callable(obj.state_dict):  # nn.Module or ScriptModule
        return obj.state_dict(), "the module's state_dict()"
    if not isinstance(obj, dict):
        raise SystemExit("export_weights: the file holds a %s, not a state_dict or a module"
                         % type(obj).__name__)
    if key is not None:
        if key not in obj:
            raise SystemExit("export_weights: no key '%s' in the checkpoint (keys: %s)"
                             % (key, ", ".join(map(str, obj))))
        return find_state_dict(torch, obj[key])[0], "checkpoint['%s']" % key
    if obj and all(torch.is_tensor(v) for v in obj.values()):
        return obj, "the top-level dict"
    for k in _KNOWN_NESTED:
        if k in obj:
            inner = obj[k]
            if hasattr(inner, "state_dict") and callable(inner.state_dict):
                return inner.state_dict(), "checkpoint['%s'].state_dict()" % k
            if isinstance(inner, dict) and inner and all(torch.is_tensor(v) for v in inner.values()):
                return inner, "checkpoint['%s']" % k
    tensors = {k: v for k, v in obj.items() if torch.is_tensor(v)}
    if tensors:
        skipped = [str(k) for k, v in obj.items() if not torch.is_tensor(v)]
        print("export_weights: taking the %d tensors of the top-level dict, skipping %s"
              % (len(tensors), ", ".join(skipped)), file=sys.stderr)
        return tensors, "the top-level dict's tensors"
    raise SystemExit("export_weights: found no state_dict in the checkpoint (keys: %s); "
                     "name the entry with --key" % ", ".join(map(str, obj)))


def write_safetensors(torch, tensors, path, metadata=None):
    names = _dtype_names(torch)
    header = collections.OrderedDict()
    blobs = []
    offset = 0
    for name, t in tensors.items():
        t = t.detach().cpu().contiguous()
        if t.dtype not in names:
            raise SystemExit("export_weights: tensor '%s' has unsupported dtype %s" % (name, t.dtype))
        if t.dtype == torch.bfloat16:
            raw = t.view(torch.int16).numpy().tobytes()
        elif t.dtype == torch.bool:
            raw = t.to(torch.uint8).numpy().tobytes()
        else:
            raw = t.numpy().tobytes()  # little-endian on every platform torch ships for
        header[name] = {"dtype": names[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    text = json.dumps(header, separators=(",", ":")).encode()
    text += b" " * ((8 - len(text) % 8) % 8)  # the data section starts 8-byte aligned
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(struct.pack("<Q", len(text)))
        f.write(text)
        for b in blobs:
            f.write(b)
    os.replace(tmp, path)  # whole or not at all


def main(argv=None):
    p = argparse.ArgumentParser(
        description="Convert a PyTorch .pt/.pth checkpoint (state_dict, training checkpoint or "
                    "pickled module) into .safetensors for cvattn. Needs only torch. Unpickling "
                    "runs code from the file: convert only checkpoints you trust.")
    p.add_argument("input", help="checkpoint written by torch.save (or torch.jit.save)")
    p.add_argument("output", help="the .safetensors file to write")
    p.add_argument("--key", help="the checkpoint entry holding the state_dict "
                                 "(default: found automatically)")
    p.add_argument("--strip-prefix", action="append", default=[], metavar="PREFIX",
                   help="remove PREFIX from the keys that start with it, e.g. 'module.' "
                        "(DataParallel); may be repeated")
    p.add_argument("--keep-dtype", action="store_true",
                   help="keep F16/BF16/F64 tensors as they are instead of writing F32")
    p.add_argument("--list", action="store_true", help="print each key, dtype and shape")
    args = p.parse_args(argv)

    import torch  # after argparse, so that --help works without torch
    obj = load_checkpoint(torch, args.input)
    state, where = find_state_dict(torch, obj, args.key)
    out = collections.OrderedDict()
    for k, v in state.items():
        if not torch.is_tensor(v):
            print("export_weights: skipping '%s' (a %s, not a tensor)" % (k, type(v).__name__),
                  file=sys.stderr)
            continue
        for prefix in args.strip_prefix:
            if k.startswith(prefix):
                k = k[len(prefix):]
        if k in out:
            raise SystemExit("export_weights: two tensors become '%s' after --strip-prefix" % k)
        if v.is_floating_point() and not args.keep_dtype:
            v = v.to(torch.float32)
        out[k] = v
    if not out:
        raise SystemExit("export_weights: %s holds no tensors" % where)
    write_safetensors(torch, out, args.output,
                      {"source": os.path.basename(args.input), "torch": torch.__version__})
    if args.list:
        for k, v in out.items():
            print("%s %s %s" % (k, str(v.dtype).replace("torch.", ""), list(v.shape)))
    print("export_weights: wrote %d tensors from %s to %s" % (len(out), where, args.output),
          file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
