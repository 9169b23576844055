# Replays torchxray patches. `model` must be a fresh instance of the patched model.
import copy
import dataclasses
import itertools

import torch


def _place(new, model, path, cast=True):
    """Give `new` the device and floating dtype of the module at `path` (or of its nearest ancestor
    holding tensors; not when `cast` is False) and that module's train/eval mode, as torchxray's
    PatchLog did."""
    parts = path.split(".")
    mode = model.get_submodule(path).training
    for i in range(len(parts), -1, -1):
        ref = model.get_submodule(".".join(parts[:i]))
        found = list(itertools.chain(ref.parameters(), ref.buffers()))
        if found:
            floats = [t for t in found if t.is_floating_point()]
            on_meta = any(t.is_meta for t in itertools.chain(new.parameters(), new.buffers()))
            if cast and not on_meta:
                new.to(device=found[0].device, dtype=floats[0].dtype if floats else None)
            break
    return new.train(mode)


def _config(base, changes):
    """A copy of `base` (a config the model's layers share, never changed itself) with `changes`
    set, as torchxray's form built it."""
    new = copy.deepcopy(base)
    try:
        for name, value in changes.items():
            setattr(new, name, value)
    except dataclasses.FrozenInstanceError:
        return dataclasses.replace(base, **changes)
    return new


@torch.no_grad()
def _carry(new, old, names):
    """Copy the named parameters and buffers (same name, same shape) from `old` into `new`."""
    src = dict(itertools.chain(old.named_parameters(), old.named_buffers()))
    dst = dict(itertools.chain(new.named_parameters(), new.named_buffers()))
    for name in names:
        dst[name].copy_(src[name])
        dst[name].requires_grad_(src[name].requires_grad)

# 1. edit conv1: Conv2d -> Conv2d; out_channels=8; kept nothing; re-initialised weight
new = _place(torch.nn.Conv2d(3, 8, (3, 3), padding=(1, 1), bias=False), model, 'conv1')
model.conv1 = new

# 2. edit bn1: BatchNorm2d -> BatchNorm2d; num_features=8; kept num_batches_tracked; re-initialised weight, bias, running_mean, running_var
new = _place(torch.nn.BatchNorm2d(8), model, 'bn1')
_carry(new, model.get_submodule('bn1'), ['num_batches_tracked'])
model.bn1 = new

# 3. replace fc: Linear -> Linear
new = _place(torch.nn.Linear(16, 4), model, 'fc')
model.fc = new

# 4. replace_all relu, layer1.0.relu, layer1.1.relu, layer2.0.relu and 1 more: ReLU -> GELU
new_1 = _place(torch.nn.GELU(), model, 'relu')
new_2 = _place(torch.nn.GELU(), model, 'layer1.0.relu')
new_3 = _place(torch.nn.GELU(), model, 'layer1.1.relu')
new_4 = _place(torch.nn.GELU(), model, 'layer2.0.relu')
new_5 = _place(torch.nn.GELU(), model, 'layer2.1.relu')
model.relu = new_1
model.get_submodule('layer1.0').relu = new_2
model.get_submodule('layer1.1').relu = new_3
model.get_submodule('layer2.0').relu = new_4
model.get_submodule('layer2.1').relu = new_5

# 5. edit layer1.0.conv1: Conv2d -> Conv2d; in_channels=8; kept nothing; re-initialised weight
new = _place(torch.nn.Conv2d(8, 16, (3, 3), padding=(1, 1), bias=False), model, 'layer1.0.conv1')
model.get_submodule('layer1.0').conv1 = new
