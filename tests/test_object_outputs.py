"""An object that is neither a tensor nor a pytree node but holds tensors in its attributes
(torchvision's ``ImageList``: ``.tensors`` and ``.image_sizes``) is read by those attributes,
as torchinfo reads ``.tensors``: "tensors" returned, "args[0].tensors" received."""

from __future__ import annotations

import torch
from torch import nn
from torchvision.models.detection.image_list import ImageList

import torchxray as tx
from torchxray._probe.values import leaf_infos
from torchxray.protocol import PROBE_MODES


class Batch(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 1)

    def forward(self, x: torch.Tensor) -> ImageList:
        y = self.conv(x)
        return ImageList(y, [(8, 8)] * y.shape[0])


class Head(nn.Module):
    def forward(self, images: ImageList) -> torch.Tensor:
        return images.tensors.mean((2, 3))


class Detector(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.transform = Batch()
        self.head = Head()

    def forward(self, x: torch.Tensor) -> tuple[ImageList, torch.Tensor]:
        images = self.transform(x)
        return images, self.head(images)


def test_an_image_list_is_read_by_its_tensors() -> None:
    for mode in PROBE_MODES:
        rep = tx.probe(Detector(), torch.randn(2, 3, 8, 8), mode=mode)
        assert rep.ok, rep.error
        assert rep["transform"].output_shapes == ((2, 4, 8, 8),)
        assert [o.name for o in rep["transform"].outputs] == ["tensors"]  # type: ignore[union-attr]
        assert rep["head"].input_shapes == ((2, 4, 8, 8),)
        assert rep["head"].inputs[0].name == "args[0].tensors"  # type: ignore[union-attr]
        assert [o.name for o in rep[""].outputs] == ["[0].tensors", "[1]"]  # type: ignore[union-attr]
    text = tx.summary(Detector(), torch.randn(2, 3, 8, 8))
    assert "tensors: [2, 4, 8, 8]" in text


class Slotted:
    __slots__ = ("mask", "note")

    def __init__(self, mask: torch.Tensor) -> None:
        self.mask, self.note = mask, "x"


class Nested:
    def __init__(self, inner: object, more: object = None) -> None:
        self.inner, self.more, self._private = inner, more, torch.ones(1)


def test_objects_are_opened_by_public_attributes_to_a_bounded_depth() -> None:
    t = torch.zeros(2, 3)
    # __slots__ too; a private attribute and a non-tensor one are left out.
    assert [i.name for i in leaf_infos(Slotted(t), "")] == ["mask"]  # type: ignore[union-attr]
    assert [i.name for i in leaf_infos(Nested(Slotted(t)), "")] == ["inner.mask"]  # type: ignore[union-attr]
    # Deeper than two objects in, or holding no tensor: the object stays one text leaf.
    assert leaf_infos(Nested(Nested(Slotted(t))), "") == ("<Nested>",)
    assert leaf_infos(Nested("text"), "") == ("<Nested>",)
    # A module held by an object is the model's, not data of the call.
    assert leaf_infos(Nested(nn.Linear(2, 2)), "") == ("<Nested>",)
    # An attribute holding a tensor is flattened whole, its other leaves as text.
    first, second = leaf_infos((Nested([t, 1]),), "args")
    assert first.name == "args[0].inner[0]" and second == "1"  # type: ignore[union-attr]
