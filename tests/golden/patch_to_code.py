# Replays torchxray patches. `model` must be a fresh instance of the patched model.
import torch
from torchxray.replay import carry as _carry, config as _config, place as _place

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
