"""torchvision: every builder of `torchvision.models.list_models()`, by kind: classification,
detection, segmentation, video, optical flow (and quantized classification). Detection models
also run in train mode, given targets: their forward then returns the losses."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import torch
from torch import nn

from .entry import Entry, Inputs

_KINDS = ("classification", "detection", "segmentation", "video", "optical_flow", "quantization")


def _make(name: str, **kw: Any) -> Any:
    def make() -> nn.Module:
        import inspect

        import torchvision

        builder = torchvision.models.get_model_builder(name)
        if "weights_backbone" in inspect.signature(builder).parameters:
            kw.setdefault("weights_backbone", None)  # its default downloads ImageNet weights
        return builder(weights=None, **kw)

    return make


def _size(name: str) -> int:
    return 299 if "inception" in name else 224


def _image_inputs(name: str) -> Any:
    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        # Two images: a training step (tx.memory) of a model that pools to 1x1 before a
        # BatchNorm needs more than one value per channel.
        g = torch.Generator().manual_seed(0)
        size = _size(name)
        return (torch.randn(2, 3, size, size, generator=g).to(device),), {}

    return inputs


def _video_inputs(name: str) -> Any:
    # MViT and S3D are built for 16 frames of 224x224 (their weights' transforms); the ResNet
    # video models take any size.
    size = 224 if name.startswith(("mvit", "s3d")) else 112

    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        g = torch.Generator().manual_seed(0)
        return (torch.randn(1, 3, 16, size, size, generator=g).to(device),), {}

    return inputs


def _flow_inputs(model: nn.Module, device: torch.device) -> Inputs:
    g = torch.Generator().manual_seed(0)
    a, b = (torch.randn(1, 3, 128, 128, generator=g).to(device) for _ in range(2))
    return (a, b), {"num_flow_updates": 2}


def _detection_inputs(train: bool) -> Any:
    def inputs(model: nn.Module, device: torch.device) -> Inputs:
        g = torch.Generator().manual_seed(0)
        # Two images in train mode: a detection head's BatchNorm needs more than one value.
        images = [torch.rand(3, 160, 192, generator=g).to(device) for _ in range(1 + train)]
        if not train:
            return (images,), {}
        boxes = torch.tensor([[10.0, 20.0, 90.0, 120.0], [40.0, 30.0, 150.0, 100.0]])
        target: dict[str, torch.Tensor] = {
            "boxes": boxes.to(device),
            "labels": torch.tensor([1, 1]).to(device),  # every detector has classes 0 and 1
        }
        if "mask" in type(model).__name__.lower():
            masks = torch.zeros(2, 160, 192, dtype=torch.uint8)
            masks[0, 20:120, 10:90] = 1
            masks[1, 30:100, 40:150] = 1
            target["masks"] = masks.to(device)
        if "keypoint" in type(model).__name__.lower():
            kp = torch.tensor([[[20.0, 30.0, 1.0]] * 17, [[50.0, 40.0, 1.0]] * 17])
            target["keypoints"] = kp.to(device)
        return (images, [target, dict(target)]), {}

    return inputs


def entries(every: bool = True) -> Iterator[Entry]:
    import torchvision.models as tvm

    for kind in _KINDS:
        module = tvm if kind == "classification" else getattr(tvm, kind)
        for name in sorted(tvm.list_models(module=module)):
            if kind == "detection":
                # Small images keep the CPU forward short; the transform resizes to min_size.
                kw: dict[str, Any] = {"min_size": 160, "max_size": 192}
                if name.startswith(("ssd", "ssdlite")):
                    kw = {}
                yield Entry("torchvision", kind, name, _make(name, **kw), _detection_inputs(False))
                yield Entry(
                    "torchvision",
                    kind,
                    f"{name}[train]",
                    _make(name, **kw),
                    _detection_inputs(True),
                    train=True,
                    note="train mode with targets: the forward returns its losses",
                )
            elif kind == "segmentation":
                yield Entry("torchvision", kind, name, _make(name), _image_inputs(name))
            elif kind == "video":
                yield Entry("torchvision", kind, name, _make(name), _video_inputs(name))
            elif kind == "optical_flow":
                yield Entry("torchvision", kind, name, _make(name), _flow_inputs)
            elif kind == "quantization":
                yield Entry(
                    "torchvision", kind, name, _make(name, quantize=False), _image_inputs(name)
                )
            else:
                yield Entry("torchvision", kind, name, _make(name), _image_inputs(name))
