"""The ecosystem sweep (`python -m bench.sweep`): models from timm, torchvision, diffusers,
transformers, open_clip, torchao, PEFT, parametrizations, torch.compile and TorchScript, built
from configs with random weights, each run bare and through torchxray's probe, memory, diff and
walk (`bench.sweep.checks`). The test suite runs a fixed sample (`families.SAMPLE`)."""
