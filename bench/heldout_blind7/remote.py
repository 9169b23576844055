"""Remote sensing: HybridSN for hyperspectral patches and a siamese change-detection U-Net
(FC-Siam-diff)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.modules.padding import ReplicationPad2d

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# HybridSN (Roy et al. 2019): three 3-D convs over (band, h, w), one 2-D conv, then dense layers
# ----------------------------------------------------------------------------------------------

class_num = 16
PATCH = 15
BANDS = 30


class HybridSN(nn.Module):
    def __init__(self, in_chs=BANDS, patch_size=PATCH, class_nums=class_num):
        super().__init__()
        self.in_chs = in_chs
        self.patch_size = patch_size
        self.conv1 = nn.Sequential(nn.Conv3d(1, 8, kernel_size=(7, 3, 3)), nn.ReLU(inplace=True))
        self.conv2 = nn.Sequential(nn.Conv3d(8, 16, kernel_size=(5, 3, 3)), nn.ReLU(inplace=True))
        self.conv3 = nn.Sequential(nn.Conv3d(16, 32, kernel_size=(3, 3, 3)), nn.ReLU(inplace=True))

        self.x1_shape = self.get_shape_after_3dconv()
        self.conv4 = nn.Sequential(
            nn.Conv2d(self.x1_shape[1] * self.x1_shape[2], 64, kernel_size=(3, 3)),
            nn.ReLU(inplace=True),
        )
        self.x2_shape = self.get_shape_after_2dconv()
        self.dense1 = nn.Sequential(
            nn.Linear(self.x2_shape, 256), nn.ReLU(inplace=True), nn.Dropout(0.4)
        )
        self.dense2 = nn.Sequential(nn.Linear(256, 128), nn.ReLU(inplace=True), nn.Dropout(0.4))
        self.dense3 = nn.Sequential(nn.Linear(128, class_nums))

    def get_shape_after_2dconv(self):
        x = torch.zeros(
            (1, self.x1_shape[1] * self.x1_shape[2], self.x1_shape[3], self.x1_shape[4])
        )
        with torch.no_grad():
            x = self.conv4(x)
        return x.shape[1] * x.shape[2] * x.shape[3]

    def get_shape_after_3dconv(self):
        x = torch.zeros((1, 1, self.in_chs, self.patch_size, self.patch_size))
        with torch.no_grad():
            x = self.conv1(x)
            x = self.conv2(x)
            x = self.conv3(x)
        return x.shape

    def forward(self, X):
        x = self.conv1(X)
        x = self.conv2(x)
        x = self.conv3(x)
        x = x.view(x.shape[0], x.shape[1] * x.shape[2], x.shape[3], x.shape[4])
        x = self.conv4(x)
        x = x.contiguous().view(x.shape[0], -1)
        x = self.dense1(x)
        x = self.dense2(x)
        return self.dense3(x)


@heldout("hybridsn_indian_pines", lambda: ((rand(2, 1, BANDS, PATCH, PATCH),), {}), train=True)
def build_hybridsn():
    return HybridSN()


# ----------------------------------------------------------------------------------------------
# FC-Siam-diff (Daudt et al. 2018): shared encoder on both dates, skip connections carry |a - b|
# ----------------------------------------------------------------------------------------------


class ConvBNReLUDrop(nn.Sequential):
    def __init__(self, in_ch, out_ch, p=0.2, transpose=False):
        conv = nn.ConvTranspose2d if transpose else nn.Conv2d
        super().__init__(
            conv(in_ch, out_ch, kernel_size=3, padding=1),
            nn.BatchNorm2d(out_ch),
            nn.ReLU(),
            nn.Dropout2d(p=p),
        )


class SiamUnet_diff(nn.Module):
    """SiamUnet_diff segmentation network."""

    def __init__(self, input_nbr, label_nbr, widths=(16, 32, 64, 128)):
        super().__init__()
        self.input_nbr = input_nbr
        w1, w2, w3, w4 = widths
        enc = [(input_nbr, w1, 2), (w1, w2, 2), (w2, w3, 3), (w3, w4, 3)]
        for lvl, (cin, cout, n) in enumerate(enc, start=1):
            for k in range(n):
                setattr(self, f"conv{lvl}{k + 1}", ConvBNReLUDrop(cin if k == 0 else cout, cout))
        self.n_enc = [n for _, _, n in enc]

        self.upconv4 = nn.ConvTranspose2d(
            w4, w4, kernel_size=3, padding=1, stride=2, output_padding=1
        )
        dec = [
            (2 * w4, w4, w3, 3),
            (2 * w3, w3, w2, 3),
            (2 * w2, w2, w1, 2),
            (2 * w1, w1, label_nbr, 2),
        ]
        for lvl, (cin, mid, cout, n) in zip([4, 3, 2, 1], dec):
            for k in range(n):
                last = k == n - 1
                a = cin if k == 0 else mid
                b = cout if last else mid
                if lvl == 1 and last:
                    setattr(
                        self,
                        f"conv{lvl}{n - k}d",
                        nn.ConvTranspose2d(a, b, kernel_size=3, padding=1),
                    )
                else:
                    setattr(self, f"conv{lvl}{n - k}d", ConvBNReLUDrop(a, b, transpose=True))
            if lvl > 1:
                setattr(
                    self,
                    f"upconv{lvl - 1}",
                    nn.ConvTranspose2d(
                        cout, cout, kernel_size=3, padding=1, stride=2, output_padding=1
                    ),
                )
        self.sm = nn.LogSoftmax(dim=1)

    def encode(self, x):
        skips = []
        for lvl, n in enumerate(self.n_enc, start=1):
            for k in range(n):
                x = getattr(self, f"conv{lvl}{k + 1}")(x)
            skips.append(x)
            x = F.max_pool2d(x, kernel_size=2, stride=2)
        return x, skips

    def forward(self, x1, x2):
        x, skips1 = self.encode(x1)
        _, skips2 = self.encode(x2)
        for lvl in (4, 3, 2, 1):
            up = getattr(self, f"upconv{lvl}")(x)
            skip = torch.abs(skips1[lvl - 1] - skips2[lvl - 1])
            pad = ReplicationPad2d((0, skip.size(3) - up.size(3), 0, skip.size(2) - up.size(2)))
            x = torch.cat((pad(up), skip), 1)
            n = 3 if lvl > 2 else 2
            for k in range(n, 0, -1):
                x = getattr(self, f"conv{lvl}{k}d")(x)
        return self.sm(x)


@heldout("siam_unet_diff_oscd", lambda: ((rand(2, 13, 32, 32), rand(2, 13, 32, 32, seed=1)), {}))
def build_siam_unet():
    return SiamUnet_diff(13, 2)
