"""Image inpainting: a partial-convolution U-Net (Liu et al., 2018) and a gated-convolution
coarse-to-fine generator (Yu et al., 2019) with a power-iteration spectral norm wrapper."""

from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn import Parameter

from .spec import heldout, rand

# --------------------------------------------------------------------------------------------
# Partial convolutions
# --------------------------------------------------------------------------------------------


class PartialConv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        # whether the mask is multi-channel or not
        if "multi_channel" in kwargs:
            self.multi_channel = kwargs["multi_channel"]
            kwargs.pop("multi_channel")
        else:
            self.multi_channel = False

        if "return_mask" in kwargs:
            self.return_mask = kwargs["return_mask"]
            kwargs.pop("return_mask")
        else:
            self.return_mask = False

        super().__init__(*args, **kwargs)

        if self.multi_channel:
            self.weight_maskUpdater = torch.ones(
                self.out_channels, self.in_channels, self.kernel_size[0], self.kernel_size[1]
            )
        else:
            self.weight_maskUpdater = torch.ones(1, 1, self.kernel_size[0], self.kernel_size[1])

        self.slide_winsize = (
            self.weight_maskUpdater.shape[1]
            * self.weight_maskUpdater.shape[2]
            * self.weight_maskUpdater.shape[3]
        )

        self.last_size = (None, None, None, None)
        self.update_mask = None
        self.mask_ratio = None

    def forward(self, input, mask_in=None):
        assert len(input.shape) == 4
        if mask_in is not None or self.last_size != tuple(input.shape):
            self.last_size = tuple(input.shape)

            with torch.no_grad():
                if self.weight_maskUpdater.type() != input.type():
                    self.weight_maskUpdater = self.weight_maskUpdater.to(input)

                if mask_in is None:
                    # if mask is not provided, create a mask
                    if self.multi_channel:
                        mask = torch.ones(
                            input.data.shape[0],
                            input.data.shape[1],
                            input.data.shape[2],
                            input.data.shape[3],
                        ).to(input)
                    else:
                        mask = torch.ones(1, 1, input.data.shape[2], input.data.shape[3]).to(input)
                else:
                    mask = mask_in

                self.update_mask = F.conv2d(
                    mask,
                    self.weight_maskUpdater,
                    bias=None,
                    stride=self.stride,
                    padding=self.padding,
                    dilation=self.dilation,
                    groups=1,
                )

                # for mixed precision training, change 1e-8 to 1e-6
                self.mask_ratio = self.slide_winsize / (self.update_mask + 1e-8)
                self.update_mask = torch.clamp(self.update_mask, 0, 1)
                self.mask_ratio = torch.mul(self.mask_ratio, self.update_mask)

        raw_out = super().forward(torch.mul(input, mask_in) if mask_in is not None else input)

        if self.bias is not None:
            bias_view = self.bias.view(1, self.out_channels, 1, 1)
            output = torch.mul(raw_out - bias_view, self.mask_ratio) + bias_view
            output = torch.mul(output, self.update_mask)
        else:
            output = torch.mul(raw_out, self.mask_ratio)

        if self.return_mask:
            return output, self.update_mask
        else:
            return output


class PCBActiv(nn.Module):
    def __init__(self, in_ch, out_ch, bn=True, sample="none-3", activ="relu", conv_bias=False):
        super().__init__()
        if sample == "down-5":
            self.conv = PartialConv2d(
                in_ch, out_ch, 5, 2, 2, bias=conv_bias, multi_channel=True, return_mask=True
            )
        elif sample == "down-7":
            self.conv = PartialConv2d(
                in_ch, out_ch, 7, 2, 3, bias=conv_bias, multi_channel=True, return_mask=True
            )
        elif sample == "down-3":
            self.conv = PartialConv2d(
                in_ch, out_ch, 3, 2, 1, bias=conv_bias, multi_channel=True, return_mask=True
            )
        else:
            self.conv = PartialConv2d(
                in_ch, out_ch, 3, 1, 1, bias=conv_bias, multi_channel=True, return_mask=True
            )

        if bn:
            self.bn = nn.BatchNorm2d(out_ch)
        if activ == "relu":
            self.activation = nn.ReLU()
        elif activ == "leaky":
            self.activation = nn.LeakyReLU(negative_slope=0.2)

    def forward(self, input, input_mask):
        h, h_mask = self.conv(input, input_mask)
        if hasattr(self, "bn"):
            h = self.bn(h)
        if hasattr(self, "activation"):
            h = self.activation(h)
        return h, h_mask


class PConvUNet(nn.Module):
    def __init__(
        self, layer_size=7, input_channels=3, upsampling_mode="nearest", widths=(64, 128, 256, 512)
    ):
        super().__init__()
        self.freeze_enc_bn = False
        self.upsampling_mode = upsampling_mode
        self.layer_size = layer_size
        w1, w2, w3, w4 = widths
        self.enc_1 = PCBActiv(input_channels, w1, bn=False, sample="down-7")
        self.enc_2 = PCBActiv(w1, w2, sample="down-5")
        self.enc_3 = PCBActiv(w2, w3, sample="down-5")
        self.enc_4 = PCBActiv(w3, w4, sample="down-3")
        for i in range(4, self.layer_size):
            name = f"enc_{i + 1:d}"
            setattr(self, name, PCBActiv(w4, w4, sample="down-3"))

        for i in range(4, self.layer_size):
            name = f"dec_{i + 1:d}"
            setattr(self, name, PCBActiv(w4 + w4, w4, activ="leaky"))
        self.dec_4 = PCBActiv(w4 + w3, w3, activ="leaky")
        self.dec_3 = PCBActiv(w3 + w2, w2, activ="leaky")
        self.dec_2 = PCBActiv(w2 + w1, w1, activ="leaky")
        self.dec_1 = PCBActiv(
            w1 + input_channels, input_channels, bn=False, activ=None, conv_bias=True
        )

    def forward(self, input, input_mask):
        h_dict = {}  # for the output of enc_N
        h_mask_dict = {}  # for the output of enc_N

        h_dict["h_0"], h_mask_dict["h_0"] = input, input_mask

        h_key_prev = "h_0"
        for i in range(1, self.layer_size + 1):
            l_key = f"enc_{i:d}"
            h_key = f"h_{i:d}"
            h_dict[h_key], h_mask_dict[h_key] = getattr(self, l_key)(
                h_dict[h_key_prev], h_mask_dict[h_key_prev]
            )
            h_key_prev = h_key

        h_key = f"h_{self.layer_size:d}"
        h, h_mask = h_dict[h_key], h_mask_dict[h_key]

        # concat upsampled output of h_enc_N-1 and dec_N+1, then do dec_N
        # (exception)
        #                            input         dec_2            dec_1
        #                            h_enc_7       h_enc_8          dec_8

        for i in range(self.layer_size, 0, -1):
            enc_h_key = f"h_{i - 1:d}"
            dec_l_key = f"dec_{i:d}"

            h = F.interpolate(h, scale_factor=2, mode=self.upsampling_mode)
            h_mask = F.interpolate(h_mask, scale_factor=2, mode="nearest")

            h = torch.cat([h, h_dict[enc_h_key]], dim=1)
            h_mask = torch.cat([h_mask, h_mask_dict[enc_h_key]], dim=1)
            h, h_mask = getattr(self, dec_l_key)(h, h_mask)

        return h, h_mask

    def train(self, mode=True):
        """Override the default train() to freeze the BN parameters"""
        super().train(mode)
        if self.freeze_enc_bn:
            for name, module in self.named_modules():
                if isinstance(module, nn.BatchNorm2d) and "enc" in name:
                    module.eval()
        return self


def _pconv_example():
    image = rand(2, 3, 32, 32)
    mask = torch.ones(2, 3, 32, 32)
    mask[:, :, 8:20, 10:26] = 0  # a hole
    mask[1, :, 2:6, :] = 0
    return (image * mask, mask), {}


@heldout(
    "partial_conv_unet",
    _pconv_example,
    edit=("enc_3", {"activ": "leaky"}),
    train=True,
)
def build_pconv_unet():
    model = PConvUNet(layer_size=5, widths=(8, 16, 32, 32))
    model.freeze_enc_bn = True  # the fine-tuning phase of the paper
    return model


# --------------------------------------------------------------------------------------------
# Gated convolutions (DeepFill v2), layers chosen by strings, spectral norm by power iteration
# --------------------------------------------------------------------------------------------


def l2normalize(v, eps=1e-12):
    return v / (v.norm() + eps)


class SpectralNorm(nn.Module):
    def __init__(self, module, name="weight", power_iterations=1):
        super().__init__()
        self.module = module
        self.name = name
        self.power_iterations = power_iterations
        if not self._made_params():
            self._make_params()

    def _update_u_v(self):
        u = getattr(self.module, self.name + "_u")
        v = getattr(self.module, self.name + "_v")
        w = getattr(self.module, self.name + "_bar")

        height = w.data.shape[0]
        for _ in range(self.power_iterations):
            v.data = l2normalize(torch.mv(torch.t(w.view(height, -1).data), u.data))
            u.data = l2normalize(torch.mv(w.view(height, -1).data, v.data))

        sigma = u.dot(w.view(height, -1).mv(v))
        setattr(self.module, self.name, w / sigma.expand_as(w))

    def _made_params(self):
        try:
            getattr(self.module, self.name + "_u")
            getattr(self.module, self.name + "_v")
            getattr(self.module, self.name + "_bar")
            return True
        except AttributeError:
            return False

    def _make_params(self):
        w = getattr(self.module, self.name)

        height = w.data.shape[0]
        width = w.view(height, -1).data.shape[1]

        u = Parameter(w.data.new(height).normal_(0, 1), requires_grad=False)
        v = Parameter(w.data.new(width).normal_(0, 1), requires_grad=False)
        u.data = l2normalize(u.data)
        v.data = l2normalize(v.data)
        w_bar = Parameter(w.data)

        del self.module._parameters[self.name]

        self.module.register_parameter(self.name + "_u", u)
        self.module.register_parameter(self.name + "_v", v)
        self.module.register_parameter(self.name + "_bar", w_bar)

    def forward(self, *args):
        self._update_u_v()
        return self.module.forward(*args)


class GatedConv2d(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        pad_type="reflect",
        activation="elu",
        norm="none",
        sn=False,
    ):
        super().__init__()
        # Initialize the padding scheme
        if pad_type == "reflect":
            self.pad = nn.ReflectionPad2d(padding)
        elif pad_type == "replicate":
            self.pad = nn.ReplicationPad2d(padding)
        elif pad_type == "zero":
            self.pad = nn.ZeroPad2d(padding)
        else:
            raise AssertionError(f"Unsupported padding type: {pad_type}")

        # Initialize the normalization type
        if norm == "bn":
            self.norm = nn.BatchNorm2d(out_channels)
        elif norm == "in":
            self.norm = nn.InstanceNorm2d(out_channels)
        elif norm == "none":
            self.norm = None
        else:
            raise AssertionError(f"Unsupported normalization: {norm}")

        # Initialize the activation funtion
        activations = {
            "relu": lambda: nn.ReLU(inplace=True),
            "lrelu": lambda: nn.LeakyReLU(0.2, inplace=True),
            "elu": lambda: nn.ELU(inplace=True),
            "tanh": nn.Tanh,
            "sigmoid": nn.Sigmoid,
            "none": lambda: None,
        }
        self.activation = activations[activation]()

        # Initialize the convolution layers
        if sn:
            self.conv2d = SpectralNorm(
                nn.Conv2d(
                    in_channels, out_channels, kernel_size, stride, padding=0, dilation=dilation
                )
            )
            self.mask_conv2d = SpectralNorm(
                nn.Conv2d(
                    in_channels, out_channels, kernel_size, stride, padding=0, dilation=dilation
                )
            )
        else:
            self.conv2d = nn.Conv2d(
                in_channels, out_channels, kernel_size, stride, padding=0, dilation=dilation
            )
            self.mask_conv2d = nn.Conv2d(
                in_channels, out_channels, kernel_size, stride, padding=0, dilation=dilation
            )
        self.sigmoid = torch.nn.Sigmoid()

    def forward(self, x):
        x = self.pad(x)
        conv = self.conv2d(x)
        mask = self.mask_conv2d(x)
        gated_mask = self.sigmoid(mask)
        if self.activation:
            conv = self.activation(conv)
        x = conv * gated_mask
        if self.norm:
            x = self.norm(x)
        return x


class TransposeGatedConv2d(nn.Module):
    def __init__(
        self,
        in_channels,
        out_channels,
        kernel_size,
        stride=1,
        padding=0,
        dilation=1,
        pad_type="zero",
        activation="lrelu",
        norm="none",
        sn=True,
        scale_factor=2,
    ):
        super().__init__()
        # Initialize the conv scheme
        self.scale_factor = scale_factor
        self.gated_conv2d = GatedConv2d(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            pad_type,
            activation,
            norm,
            sn,
        )

    def forward(self, x):
        x = F.interpolate(x, scale_factor=self.scale_factor, mode="nearest")
        x = self.gated_conv2d(x)
        return x


class GatedGenerator(nn.Module):
    def __init__(self, opt):
        super().__init__()
        lc = opt.latent_channels
        kw = dict(pad_type=opt.pad_type, activation=opt.activation, norm=opt.norm)
        self.coarse = nn.Sequential(
            # encoder
            GatedConv2d(opt.in_channels, lc, 5, 1, 2, **kw),
            GatedConv2d(lc, lc * 2, 3, 2, 1, **kw),
            GatedConv2d(lc * 2, lc * 2, 3, 1, 1, **kw),
            GatedConv2d(lc * 2, lc * 4, 3, 2, 1, **kw),
            # bottleneck with growing dilation
            GatedConv2d(lc * 4, lc * 4, 3, 1, 2, dilation=2, **kw),
            GatedConv2d(lc * 4, lc * 4, 3, 1, 4, dilation=4, **kw),
            GatedConv2d(lc * 4, lc * 4, 3, 1, 1, **kw),
            # decoder
            TransposeGatedConv2d(lc * 4, lc * 2, 3, 1, 1, **kw, sn=False),
            GatedConv2d(lc * 2, lc * 2, 3, 1, 1, **kw),
            TransposeGatedConv2d(lc * 2, lc, 3, 1, 1, **kw, sn=False),
            GatedConv2d(
                lc, opt.out_channels, 3, 1, 1, pad_type=opt.pad_type, activation="tanh", norm="none"
            ),
        )
        self.refine_conv = nn.Sequential(
            GatedConv2d(opt.in_channels, lc, 5, 1, 2, **kw),
            GatedConv2d(lc, lc, 3, 2, 1, **kw),
            GatedConv2d(lc, lc * 2, 3, 1, 1, **kw),
            GatedConv2d(lc * 2, lc * 4, 3, 2, 1, **kw),
            GatedConv2d(lc * 4, lc * 4, 3, 1, 2, dilation=2, **kw),
            GatedConv2d(lc * 4, lc * 4, 3, 1, 4, dilation=4, **kw),
        )
        self.refine_combine = nn.Sequential(
            GatedConv2d(lc * 4, lc * 4, 3, 1, 1, **kw, sn=opt.use_sn),
            TransposeGatedConv2d(lc * 4, lc * 2, 3, 1, 1, **kw, sn=opt.use_sn),
            GatedConv2d(lc * 2, lc * 2, 3, 1, 1, **kw, sn=opt.use_sn),
            TransposeGatedConv2d(lc * 2, lc, 3, 1, 1, **kw, sn=opt.use_sn),
            GatedConv2d(
                lc, opt.out_channels, 3, 1, 1, pad_type=opt.pad_type, activation="tanh", norm="none"
            ),
        )

    def forward(self, img, mask):
        # img: entire img
        # mask: 1 for mask region; 0 for unmask region
        # Coarse
        first_masked_img = img * (1 - mask) + mask
        first_in = torch.cat((first_masked_img, mask), dim=1)  # in: [B, 4, H, W]
        first_out = self.coarse(first_in)  # out: [B, 3, H, W]
        first_out = F.interpolate(first_out, (img.shape[2], img.shape[3]))
        # Refinement
        second_masked_img = img * (1 - mask) + first_out * mask
        second_in = torch.cat([second_masked_img, mask], dim=1)
        refine_conv = self.refine_conv(second_in)
        second_out = self.refine_combine(refine_conv)
        second_out = F.interpolate(second_out, (img.shape[2], img.shape[3]))
        return first_out, second_out


def _gated_example():
    img = rand(2, 3, 32, 32, seed=1).tanh()
    mask = torch.zeros(2, 1, 32, 32)
    mask[:, :, 12:24, 6:18] = 1
    return (img, mask), {}


@heldout("gated_conv_deepfill", _gated_example)
def build_gated_generator():
    opt = SimpleNamespace(
        in_channels=4,
        out_channels=3,
        latent_channels=8,
        pad_type="zero",
        activation="elu",
        norm="none",
        use_sn=True,
    )
    return GatedGenerator(opt)
