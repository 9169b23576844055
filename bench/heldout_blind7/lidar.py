"""Lidar: PointPillars' pillar feature net, scatter to a BEV canvas, 2-D backbone and SSD head."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout


def get_paddings_indicator(actual_num, max_num, axis=0):
    actual_num = torch.unsqueeze(actual_num, axis + 1)
    max_num_shape = [1] * len(actual_num.shape)
    max_num_shape[axis + 1] = -1
    max_num = torch.arange(max_num, dtype=torch.int, device=actual_num.device).view(max_num_shape)
    paddings_indicator = actual_num.int() > max_num
    return paddings_indicator


class Empty(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()

    def forward(self, *args, **kwargs):
        if len(args) == 1:
            return args[0]
        elif len(args) == 0:
            return None
        return args


class PFNLayer(nn.Module):
    def __init__(self, in_channels, out_channels, use_norm=True, last_layer=False):
        """Pillar Feature Net Layer: a linear layer, BatchNorm and a max over the pillar's points."""
        super().__init__()
        self.name = "PFNLayer"
        self.last_vfe = last_layer
        if not self.last_vfe:
            out_channels = out_channels // 2
        self.units = out_channels

        if use_norm:
            BatchNorm1d = lambda c: nn.BatchNorm1d(c, eps=1e-3, momentum=0.01)  # noqa: E731
            Linear = lambda i, o: nn.Linear(i, o, bias=False)  # noqa: E731
        else:
            BatchNorm1d = Empty
            Linear = lambda i, o: nn.Linear(i, o, bias=True)  # noqa: E731

        self.linear = Linear(in_channels, self.units)
        self.norm = BatchNorm1d(self.units)

    def forward(self, inputs):
        x = self.linear(inputs)
        x = self.norm(x.permute(0, 2, 1).contiguous()).permute(0, 2, 1).contiguous()
        x = F.relu(x)
        x_max = torch.max(x, dim=1, keepdim=True)[0]
        if self.last_vfe:
            return x_max
        x_repeat = x_max.repeat(1, inputs.shape[1], 1)
        x_concatenated = torch.cat([x, x_repeat], dim=2)
        return x_concatenated


class PillarFeatureNet(nn.Module):
    def __init__(
        self,
        num_input_features=4,
        use_norm=True,
        num_filters=(64,),
        with_distance=False,
        voxel_size=(0.2, 0.2, 4),
        pc_range=(0, -40, -3, 70.4, 40, 1),
    ):
        super().__init__()
        self.name = "PillarFeatureNet"
        assert len(num_filters) > 0
        num_input_features += 5
        if with_distance:
            num_input_features += 1
        self._with_distance = with_distance

        num_filters = [num_input_features] + list(num_filters)
        pfn_layers = []
        for i in range(len(num_filters) - 1):
            in_filters = num_filters[i]
            out_filters = num_filters[i + 1]
            if i < len(num_filters) - 2:
                last_layer = False
            else:
                last_layer = True
            pfn_layers.append(PFNLayer(in_filters, out_filters, use_norm, last_layer=last_layer))
        self.pfn_layers = nn.ModuleList(pfn_layers)

        self.vx = voxel_size[0]
        self.vy = voxel_size[1]
        self.x_offset = self.vx / 2 + pc_range[0]
        self.y_offset = self.vy / 2 + pc_range[1]

    def forward(self, features, num_voxels, coors):
        points_mean = features[:, :, :3].sum(dim=1, keepdim=True) / num_voxels.type_as(
            features
        ).view(-1, 1, 1)
        f_cluster = features[:, :, :3] - points_mean

        f_center = torch.zeros_like(features[:, :, :2])
        f_center[:, :, 0] = features[:, :, 0] - (
            coors[:, 3].float().unsqueeze(1) * self.vx + self.x_offset
        )
        f_center[:, :, 1] = features[:, :, 1] - (
            coors[:, 2].float().unsqueeze(1) * self.vy + self.y_offset
        )

        features_ls = [features, f_cluster, f_center]
        if self._with_distance:
            points_dist = torch.norm(features[:, :, :3], 2, 2, keepdim=True)
            features_ls.append(points_dist)
        features = torch.cat(features_ls, dim=-1)

        voxel_count = features.shape[1]
        mask = get_paddings_indicator(num_voxels, voxel_count, axis=0)
        mask = torch.unsqueeze(mask, -1).type_as(features)
        features *= mask

        for pfn in self.pfn_layers:
            features = pfn(features)
        return features.squeeze()


class PointPillarsScatter(nn.Module):
    def __init__(self, output_shape, num_input_features=64):
        super().__init__()
        self.name = "PointPillarsScatter"
        self.output_shape = output_shape
        self.ny = output_shape[2]
        self.nx = output_shape[3]
        self.nchannels = num_input_features

    def forward(self, voxel_features, coords, batch_size):
        batch_canvas = []
        for batch_itt in range(batch_size):
            canvas = torch.zeros(
                self.nchannels,
                self.nx * self.ny,
                dtype=voxel_features.dtype,
                device=voxel_features.device,
            )
            batch_mask = coords[:, 0] == batch_itt
            this_coords = coords[batch_mask, :]
            indices = this_coords[:, 2] * self.nx + this_coords[:, 3]
            indices = indices.type(torch.long)
            voxels = voxel_features[batch_mask, :]
            voxels = voxels.t()
            canvas[:, indices] = voxels
            batch_canvas.append(canvas)
        batch_canvas = torch.stack(batch_canvas, 0)
        return batch_canvas.view(batch_size, self.nchannels, self.ny, self.nx)


class RPN(nn.Module):
    def __init__(
        self,
        use_norm=True,
        num_class=2,
        layer_nums=(3, 5, 5),
        layer_strides=(2, 2, 2),
        num_filters=(128, 128, 256),
        upsample_strides=(1, 2, 4),
        num_upsample_filters=(256, 256, 256),
        num_input_filters=128,
        num_anchor_per_loc=2,
        encode_background_as_zeros=True,
        use_direction_classifier=True,
        box_code_size=7,
    ):
        super().__init__()
        self._num_anchor_per_loc = num_anchor_per_loc
        self._use_direction_classifier = use_direction_classifier
        assert len(layer_nums) == 3
        if use_norm:
            BatchNorm2d = lambda c: nn.BatchNorm2d(c, eps=1e-3, momentum=0.01)  # noqa: E731
            conv_bias = False
        else:
            BatchNorm2d = Empty
            conv_bias = True

        in_filters = [num_input_filters, *num_filters[:-1]]
        for i in range(3):
            blk = [nn.ZeroPad2d(1), nn.Conv2d(in_filters[i], num_filters[i], 3, stride=layer_strides[i], bias=conv_bias), BatchNorm2d(num_filters[i]), nn.ReLU()]  # fmt: skip
            for _ in range(layer_nums[i]):
                blk += [nn.Conv2d(num_filters[i], num_filters[i], 3, padding=1, bias=conv_bias), BatchNorm2d(num_filters[i]), nn.ReLU()]  # fmt: skip
            setattr(self, f"block{i + 1}", nn.Sequential(*blk))
            setattr(
                self,
                f"deconv{i + 1}",
                nn.Sequential(
                    nn.ConvTranspose2d(
                        num_filters[i],
                        num_upsample_filters[i],
                        upsample_strides[i],
                        stride=upsample_strides[i],
                        bias=conv_bias,
                    ),
                    BatchNorm2d(num_upsample_filters[i]),
                    nn.ReLU(),
                ),
            )
        if encode_background_as_zeros:
            num_cls = num_anchor_per_loc * num_class
        else:
            num_cls = num_anchor_per_loc * (num_class + 1)
        self.conv_cls = nn.Conv2d(sum(num_upsample_filters), num_cls, 1)
        self.conv_box = nn.Conv2d(sum(num_upsample_filters), num_anchor_per_loc * box_code_size, 1)
        if use_direction_classifier:
            self.conv_dir_cls = nn.Conv2d(sum(num_upsample_filters), num_anchor_per_loc * 2, 1)

    def forward(self, x):
        x = self.block1(x)
        up1 = self.deconv1(x)
        x = self.block2(x)
        up2 = self.deconv2(x)
        x = self.block3(x)
        up3 = self.deconv3(x)
        x = torch.cat([up1, up2, up3], dim=1)
        box_preds = self.conv_box(x).permute(0, 2, 3, 1).contiguous()
        cls_preds = self.conv_cls(x).permute(0, 2, 3, 1).contiguous()
        ret_dict = {"box_preds": box_preds, "cls_preds": cls_preds}
        if self._use_direction_classifier:
            ret_dict["dir_cls_preds"] = self.conv_dir_cls(x).permute(0, 2, 3, 1).contiguous()
        return ret_dict


class PointPillars(nn.Module):
    def __init__(
        self, grid=(32, 32), pfn_filters=(32,), rpn_filters=(16, 16, 32), up_filters=(16, 16, 16)
    ):
        super().__init__()
        self.voxel_feature_extractor = PillarFeatureNet(4, use_norm=True, num_filters=pfn_filters, with_distance=False, voxel_size=(0.5, 0.5, 4), pc_range=(0, -8, -3, 16, 8, 1))  # fmt: skip
        self.middle_feature_extractor = PointPillarsScatter(output_shape=[1, 1, grid[0], grid[1], pfn_filters[-1]], num_input_features=pfn_filters[-1])  # fmt: skip
        self.rpn = RPN(num_class=3, layer_nums=(1, 2, 2), num_filters=rpn_filters, num_upsample_filters=up_filters, num_input_filters=pfn_filters[-1])  # fmt: skip

    def forward(self, voxels, num_points, coors, batch_size):
        voxel_features = self.voxel_feature_extractor(voxels, num_points, coors)
        spatial_features = self.middle_feature_extractor(voxel_features, coors, batch_size)
        return self.rpn(spatial_features)


def _pillars():
    g = torch.Generator().manual_seed(0)
    P, N = 40, 12  # pillars (over the batch), points per pillar
    num_points = torch.randint(1, N + 1, (P,), generator=g)
    voxels = torch.rand(P, N, 4, generator=g) * torch.tensor([16.0, 16.0, 4.0, 1.0]) - torch.tensor(
        [0.0, 8.0, 3.0, 0.0]
    )
    flat = torch.randperm(32 * 32, generator=g)[:P]
    batch = torch.arange(P) % 2
    coors = torch.stack([batch, torch.zeros(P, dtype=torch.long), flat // 32, flat % 32], 1).int()
    return (voxels, num_points, coors, 2), {}


@heldout("pointpillars", _pillars)
def build_pointpillars():
    return PointPillars()
