"""Helpers shared by the demo-weight trainers (run with /usr/bin/python3, Debian's python3-torch).

Each trainer writes assets/weights/<name>.safetensors plus a model card <name>.md and a small
input/output check pair that the C++ tests use to prove they rebuild the network exactly.
"""
import importlib.util
import os
import random

import numpy as np
import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
ASSETS = os.path.join(ROOT, "assets")
WEIGHTS = os.path.join(ASSETS, "weights")

# The fixture generators' writer, so the project has one safetensors implementation. Loaded under
# its own name: tests/fixtures/common.py would clash with other modules called "common".
_spec = importlib.util.spec_from_file_location(
    "fixture_common", os.path.join(ROOT, "tests", "fixtures", "common.py"))
_fixture_common = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_fixture_common)
save_safetensors = _fixture_common.save_safetensors


def seed_everything(seed):
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.use_deterministic_algorithms(True)


def save_check_pair(folder, **arrays):
    """Writes <name>.npy (float32, C order) for each array into folder."""
    os.makedirs(folder, exist_ok=True)
    for name, value in arrays.items():
        arr = value.detach().cpu().numpy() if torch.is_tensor(value) else np.asarray(value)
        np.save(os.path.join(folder, name + ".npy"), np.ascontiguousarray(arr, dtype=np.float32))


def state_dict_for_export(model):
    """float32 tensors only; num_batches_tracked (int64, unused at inference) is kept as the
    loaders must accept it."""
    return {k: v.detach().clone() for k, v in model.state_dict().items()}
