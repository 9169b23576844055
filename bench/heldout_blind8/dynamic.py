"""Early-exit and dynamic networks (BranchyNet, SkipNet gates), continual learning (progressive
networks with lateral adapters, an EWC-wrapped model), test-time adaptation (TENT) and model
compression wrappers (knowledge distillation, magnitude-pruned layers with masks as buffers)."""

from __future__ import annotations

import copy
from functools import partial

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

NUM_CLASSES = 10

# ----------------------------------------------------------------------------- BranchyNet


class ConvPoolAc(nn.Module):
    def __init__(self, chanIn, chanOut, kernel=3, stride=1, p_ceil_mode=False):
        super().__init__()
        self.layer = nn.Sequential(
            nn.Conv2d(chanIn, chanOut, kernel_size=kernel, stride=stride, padding=1, bias=False),
            nn.MaxPool2d(2, stride=2, ceil_mode=p_ceil_mode),
            nn.ReLU(True),
        )

    def forward(self, x):
        return self.layer(x)


class B_Lenet(nn.Module):
    def __init__(self, exit_threshold=0.5):
        super().__init__()
        self.exit_threshold = torch.tensor([exit_threshold], dtype=torch.float32)
        self.fast_inference_mode = False
        self.exit_loss_weights = [1.0, 0.3]
        self.backbone = nn.ModuleList()
        self.exits = nn.ModuleList()
        self.chan_num = 5
        self._build_backbone()
        self._build_exits()

    def _build_backbone(self):
        strt_bl = nn.Sequential(
            nn.Conv2d(1, 5, kernel_size=5, stride=1, padding=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
        )
        self.backbone.append(strt_bl)
        bb_layers = [
            nn.Conv2d(5, 10, kernel_size=5, stride=1, padding=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Conv2d(10, 20, kernel_size=5, stride=1, padding=3),
            nn.MaxPool2d(2, stride=2),
            nn.ReLU(True),
            nn.Flatten(),
            nn.Linear(500, 84),
        ]
        self.backbone.append(nn.Sequential(*bb_layers))

    def _build_exits(self):
        ee1 = nn.Sequential(
            ConvPoolAc(self.chan_num, 10, kernel=3, stride=1, p_ceil_mode=True),
            nn.Flatten(),
            nn.Linear(640, NUM_CLASSES, bias=False),
        )
        self.exits.append(ee1)
        self.exits.append(nn.Sequential(nn.Linear(84, NUM_CLASSES, bias=False)))

    @staticmethod
    def exit_criterion_top1(x):
        with torch.no_grad():
            pk = F.softmax(x, dim=-1)
            return torch.max(pk)

    def forward(self, x):
        res = []
        if self.fast_inference_mode:
            for bb, ee in zip(self.backbone, self.exits):
                x = bb(x)
                res = ee(x)
                if self.exit_criterion_top1(res) > self.exit_threshold:
                    return [res, "early"]
            return [res, "main"]
        for bb, ee in zip(self.backbone, self.exits):
            x = bb(x)
            res.append(ee(x))
        return res


@heldout("branchynet_lenet", lambda: ((rand(2, 1, 28, 28),), {}))
def build_branchynet():
    return B_Lenet()


# ----------------------------------------------------------------------------- SkipNet


def conv3x3(in_planes, out_planes, stride=1):
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride, padding=1, bias=False)


class ResBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super().__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample

    def forward(self, x):
        residual = x if self.downsample is None else self.downsample(x)
        out = self.relu(self.bn1(self.conv1(x)))
        return self.relu(self.bn2(self.conv2(out)) + residual)


class RNNGatePolicy(nn.Module):
    def __init__(self, input_dim, hidden_dim, rnn_type="lstm"):
        super().__init__()
        self.rnn_type = rnn_type
        self.input_dim = input_dim
        self.hidden_dim = hidden_dim
        self.rnn = nn.LSTM(input_dim, hidden_dim) if rnn_type == "lstm" else None
        self.proj = nn.Conv2d(in_channels=hidden_dim, out_channels=1, kernel_size=1, stride=1)
        self.prob = nn.Sigmoid()

    def init_hidden(self, batch_size, device):
        z = torch.zeros(1, batch_size, self.hidden_dim, device=device)
        return (z, z.clone())

    def forward(self, x, hidden):
        batch_size = x.size(0)
        out, hidden = self.rnn(x.view(1, batch_size, -1), hidden)
        proj = self.proj(out.squeeze(0).view(batch_size, self.hidden_dim, 1, 1))
        prob = self.prob(proj)
        disc_prob = (prob > 0.5).float().detach() - prob.detach() + prob
        return disc_prob.view(batch_size, 1, 1, 1), prob, hidden


class RecurrentGatedResNet(nn.Module):
    def __init__(
        self,
        block,
        layers,
        num_classes=10,
        embed_dim=10,
        hidden_dim=10,
        gate_type="rnn",
        widths=(16, 32, 64),
    ):
        super().__init__()
        self.inplanes = widths[0]
        self.num_layers = layers
        self.conv1 = conv3x3(3, widths[0])
        self.bn1 = nn.BatchNorm2d(widths[0])
        self.relu = nn.ReLU(inplace=True)
        self.embed_dim = embed_dim
        self.hidden_dim = hidden_dim
        for g, (n, w) in enumerate(zip(layers, widths)):
            self._make_group(block, w, n, group_id=g + 1, pool_size=32 // (2**g))
        if gate_type == "rnn":
            self.control = RNNGatePolicy(embed_dim, hidden_dim, rnn_type="lstm")
        else:
            raise ValueError(f"gate type {gate_type} not supported")
        self.avgpool = nn.AdaptiveAvgPool2d(1)
        self.fc = nn.Linear(widths[-1] * block.expansion, num_classes)

    def _make_group(self, block, planes, layers, group_id=1, pool_size=16):
        for i in range(layers):
            stride = 2 if (group_id > 1 and i == 0) else 1
            meta = self._make_layer_v2(block, planes, stride=stride, pool_size=pool_size)
            setattr(self, f"group{group_id}_ds{i}", meta[0])
            setattr(self, f"group{group_id}_layer{i}", meta[1])
            setattr(self, f"group{group_id}_gate{i}", meta[2])

    def _make_layer_v2(self, block, planes, stride=1, pool_size=16):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion, 1, stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )
        layer = block(self.inplanes, planes, stride, downsample)
        self.inplanes = planes * block.expansion
        gate_layer = nn.Sequential(
            nn.AvgPool2d(pool_size),
            nn.Conv2d(planes * block.expansion, self.embed_dim, kernel_size=1, stride=1),
        )
        return downsample, layer, gate_layer

    def forward(self, x):
        batch_size = x.size(0)
        x = self.relu(self.bn1(self.conv1(x)))
        hidden = self.control.init_hidden(batch_size, x.device)
        masks, gprobs = [], []
        gate_feature = self.group1_gate0(x)
        mask, gprob, hidden = self.control(gate_feature, hidden)
        prev = x
        for g in range(len(self.num_layers)):
            for i in range(self.num_layers[g]):
                if g == 0 and i == 0:
                    prev = x = self.group1_layer0(x)
                    mask, gprob, hidden = self.control(self.group1_gate0(x), hidden)
                    continue
                ds = getattr(self, f"group{g + 1}_ds{i}")
                if ds is not None:
                    prev = ds(prev)
                x = getattr(self, f"group{g + 1}_layer{i}")(x)
                prev = x = mask.expand_as(x) * x + (1 - mask).expand_as(prev) * prev
                masks.append(mask.squeeze())
                gprobs.append(gprob)
                gate_feature = getattr(self, f"group{g + 1}_gate{i}")(x)
                mask, gprob, hidden = self.control(gate_feature, hidden)
        x = self.avgpool(x).view(batch_size, -1)
        return self.fc(x), masks, gprobs


@heldout("skipnet_rnn_gates", lambda: ((rand(2, 3, 32, 32),), {}))
def build_skipnet():
    return RecurrentGatedResNet(ResBlock, [2, 2, 2], num_classes=10, embed_dim=8, hidden_dim=8)


# ----------------------------------------------------------------------------- Progressive nets


class ProgBlock(nn.Module):
    def runBlock(self, x):
        raise NotImplementedError

    def runLateral(self, i, x):
        raise NotImplementedError

    def runActivation(self, x):
        raise NotImplementedError


class ProgDenseBlock(ProgBlock):
    def __init__(self, inSize, outSize, numLaterals, activation=nn.ReLU()):  # noqa: B008
        super().__init__()
        self.numLaterals = numLaterals
        self.inSize = inSize
        self.outSize = outSize
        self.module = nn.Linear(inSize, outSize)
        self.laterals = nn.ModuleList([nn.Linear(inSize, outSize) for _ in range(numLaterals)])
        self.activation = activation if activation is not None else nn.Identity()

    def runBlock(self, x):
        return self.module(x)

    def runLateral(self, i, x):
        return self.laterals[i](x)

    def runActivation(self, x):
        return self.activation(x)


class ProgColumn(nn.Module):
    def __init__(self, colID, blockList, parentCols=()):
        super().__init__()
        self.colID = colID
        self.isFrozen = False
        self.parentCols = parentCols
        self.blocks = nn.ModuleList(blockList)
        self.numRows = len(blockList)
        self.lastOutputList = []

    def freeze(self, unfreeze=False):
        self.isFrozen = not unfreeze
        for param in self.parameters():
            param.requires_grad = unfreeze

    def forward(self, input):
        outputs = []
        x = input
        for row, block in enumerate(self.blocks):
            currOutput = block.runBlock(x)
            if row == 0 or len(self.parentCols) < 1:
                y = block.runActivation(currOutput)
            else:
                for c, col in enumerate(self.parentCols):
                    currOutput = currOutput + block.runLateral(c, col.lastOutputList[row - 1])
                y = block.runActivation(currOutput)
            outputs.append(y)
            x = y
        self.lastOutputList = outputs
        return outputs[-1]


class ProgNet(nn.Module):
    def __init__(self, colGen=None):
        super().__init__()
        self.columns = nn.ModuleList()
        self.numRows = None
        self.numCols = 0
        self.colMap = {}
        self.colGen = colGen

    def addColumn(self, col=None, msg=None):
        if col is None:
            parents = list(self.columns)
            col = self.colGen.generateColumn(parents, msg)
        self.columns.append(col)
        self.colMap[col.colID] = self.numCols
        self.numRows = col.numRows
        self.numCols += 1
        return col.colID

    def freezeAllColumns(self):
        for col in self.columns:
            col.freeze()

    def forward(self, id, x):
        colToOutput = self.colMap[id]
        for i, col in enumerate(self.columns):
            y = col(x)
            if i == colToOutput:
                return y


class DenseColumnGenerator:
    def __init__(self, input_size, hidden, output_size):
        self.input_size = input_size
        self.hidden = hidden
        self.output_size = output_size
        self.ids = 0

    def generateColumn(self, parentCols, msg=None):
        sizes = [self.input_size, *self.hidden, self.output_size]
        blocks = []
        for i in range(len(sizes) - 1):
            act = nn.ReLU() if i < len(sizes) - 2 else None
            blocks.append(ProgDenseBlock(sizes[i], sizes[i + 1], len(parentCols), activation=act))
        col = ProgColumn(self.ids, blocks, parentCols)
        self.ids += 1
        return col


@heldout("progressive_net_laterals", lambda: ((2, rand(4, 12)), {}))
def build_prognet():
    net = ProgNet(colGen=DenseColumnGenerator(12, [24, 16], 4))
    net.addColumn()
    net.freezeAllColumns()
    net.addColumn()
    net.freezeAllColumns()
    net.addColumn()
    return net


# ----------------------------------------------------------------------------- EWC


class SmallConvNet(nn.Module):
    def __init__(self, in_ch=1, widths=(8, 16), n_classes=NUM_CLASSES, norm=nn.BatchNorm2d):
        super().__init__()
        layers = []
        for w in widths:
            layers += [nn.Conv2d(in_ch, w, 3, padding=1), norm(w), nn.ReLU(), nn.MaxPool2d(2)]
            in_ch = w
        self.features = nn.Sequential(*layers)
        self.head = nn.Linear(in_ch, n_classes)

    def forward(self, x):
        return self.head(self.features(x).mean((2, 3)))


class EWC(nn.Module):
    """Wraps a model with the Fisher diagonal and the anchor weights as buffers."""

    def __init__(self, model, ewc_lambda=100.0, gamma=1.0, online=False):
        super().__init__()
        self.model = model
        self.ewc_lambda = ewc_lambda
        self.gamma = gamma
        self.online = online
        self.EWC_task_count = 0
        for n, p in self.model.named_parameters():
            n = n.replace(".", "__")
            self.register_buffer(f"{n}_EWC_prev_task", p.detach().clone())
            self.register_buffer(f"{n}_EWC_estimated_fisher", torch.rand_like(p) * 1e-2)

    def ewc_loss(self):
        losses = []
        for n, p in self.model.named_parameters():
            n = n.replace(".", "__")
            mean = getattr(self, f"{n}_EWC_prev_task")
            fisher = getattr(self, f"{n}_EWC_estimated_fisher")
            fisher = self.gamma * fisher if self.online else fisher
            losses.append((fisher * (p - mean) ** 2).sum())
        return 0.5 * self.ewc_lambda * sum(losses)

    def forward(self, *args, **kwargs):
        return self.model(*args, **kwargs)


@heldout("ewc_wrapped_convnet", lambda: ((rand(2, 1, 16, 16),), {}))
def build_ewc():
    return EWC(SmallConvNet(in_ch=1, widths=(8, 16)), ewc_lambda=5000.0)


# ----------------------------------------------------------------------------- TENT


def configure_model(model):
    model.train()
    model.requires_grad_(False)
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.requires_grad_(True)
            m.track_running_stats = False
            m.running_mean = None
            m.running_var = None
    return model


def collect_params(model):
    params = []
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            for np_, p in m.named_parameters():
                if np_ in ["weight", "bias"]:
                    params.append(p)
    return params


def softmax_entropy(x):
    return -(x.softmax(1) * x.log_softmax(1)).sum(1)


class Tent(nn.Module):
    def __init__(self, model, optimizer_factory, steps=1, episodic=False):
        super().__init__()
        self.model = configure_model(model)
        self.optimizer = optimizer_factory(collect_params(self.model))
        self.steps = steps
        assert steps > 0, "tent requires >= 1 step(s) to forward and update"
        self.episodic = episodic
        self.model_state = copy.deepcopy(self.model.state_dict())

    def forward(self, x):
        if self.episodic:
            self.model.load_state_dict(self.model_state, strict=True)
        outputs = None
        for _ in range(self.steps):
            outputs = self.forward_and_adapt(x)
        return outputs

    @torch.enable_grad()
    def forward_and_adapt(self, x):
        outputs = self.model(x)
        loss = softmax_entropy(outputs).mean(0)
        loss.backward()
        self.optimizer.step()
        self.optimizer.zero_grad()
        return outputs


@heldout("tent_bn_adaptation", lambda: ((rand(4, 1, 16, 16),), {}), train=True)
def build_tent():
    return Tent(
        SmallConvNet(widths=(8, 16)),
        partial(torch.optim.SGD, lr=1e-3, momentum=0.9),
        steps=1,
        episodic=True,
    )


# ----------------------------------------------------------------------------- KD


class Teacher(SmallConvNet):
    def __init__(self, in_ch=3, **kwargs):
        super().__init__(in_ch=in_ch, widths=(16, 32, 32), **kwargs)


class Student(SmallConvNet):
    def __init__(self, in_ch=3, width_mult=0.5, **kwargs):
        super().__init__(in_ch=in_ch, widths=(int(16 * width_mult), int(32 * width_mult)), **kwargs)


class Distiller(nn.Module):
    def __init__(self, student, teacher, temperature=4.0, alpha=0.9, hint_layers=None):
        super().__init__()
        self.student = student
        self.teacher = teacher
        self.teacher.eval()
        for p in self.teacher.parameters():
            p.requires_grad = False
        self.T = temperature
        self.alpha = alpha
        self.hints = nn.ModuleDict()
        for s_name, t_name, s_ch, t_ch in hint_layers or []:
            self.hints[f"{s_name}->{t_name}".replace(".", "_")] = nn.Conv2d(s_ch, t_ch, 1)
        self.hint_layers = hint_layers or []

    def train(self, mode=True):
        super().train(mode)
        self.teacher.eval()
        return self

    def forward(self, x):
        s_feats = self.student.features(x)
        s_logits = self.student.head(s_feats.mean((2, 3)))
        with torch.no_grad():
            t_feats = self.teacher.features(x)
            t_logits = self.teacher.head(t_feats.mean((2, 3)))
        kd = (
            F.kl_div(
                F.log_softmax(s_logits / self.T, 1),
                F.softmax(t_logits / self.T, 1),
                reduction="batchmean",
            )
            * self.T
            * self.T
        )
        hint_loss = s_logits.new_zeros(())
        for adapter in self.hints.values():
            a = adapter(s_feats)
            hint_loss = hint_loss + F.mse_loss(
                F.adaptive_avg_pool2d(a, t_feats.shape[-2:]), t_feats
            )
        return s_logits, self.alpha * kd + hint_loss


@heldout(
    "kd_student_teacher",
    lambda: ((rand(2, 3, 32, 32),), {}),
    train=True,
)
def build_kd():
    return Distiller(Student(), Teacher(), hint_layers=[("features", "features", 16, 32)])


# ----------------------------------------------------------------------------- pruning


class MaskedConv2d(nn.Conv2d):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.register_buffer("mask", torch.ones_like(self.weight))

    def prune(self, amount):
        k = int(amount * self.weight.numel())
        if k == 0:
            return
        threshold = self.weight.detach().abs().flatten().kthvalue(k).values
        self.mask.copy_((self.weight.detach().abs() > threshold).float())

    def forward(self, x):
        return self._conv_forward(x, self.weight * self.mask, self.bias)


class MaskedLinear(nn.Linear):
    def __init__(self, in_features, out_features, bias=True):
        super().__init__(in_features, out_features, bias)
        self.register_buffer("mask", torch.ones(out_features, in_features))

    def prune(self, amount):
        k = int(amount * self.weight.numel())
        threshold = self.weight.detach().abs().flatten().kthvalue(max(k, 1)).values
        self.mask.copy_((self.weight.detach().abs() > threshold).float())

    def forward(self, x):
        return F.linear(x, self.weight * self.mask, self.bias)


CFG_VGG_TINY = [16, "M", 32, "M", 32, "M"]


class PrunedVGG(nn.Module):
    def __init__(self, cfg=CFG_VGG_TINY, num_classes=NUM_CLASSES, sparsity=0.5):  # noqa: B006
        super().__init__()
        layers, c = [], 3
        for v in cfg:
            if v == "M":
                layers.append(nn.MaxPool2d(2, 2))
            else:
                layers += [
                    MaskedConv2d(c, v, kernel_size=3, padding=1),
                    nn.BatchNorm2d(v),
                    nn.ReLU(inplace=True),
                ]
                c = v
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            MaskedLinear(c * 4 * 4, 32), nn.ReLU(True), MaskedLinear(32, num_classes)
        )
        for m in self.modules():
            if isinstance(m, (MaskedConv2d, MaskedLinear)):
                m.prune(sparsity)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


@heldout(
    "pruned_vgg_masks",
    lambda: ((rand(2, 3, 32, 32),), {}),
    edit=("features.4", {"kernel_size": 5, "padding": 2}),
)
def build_pruned():
    return PrunedVGG(sparsity=0.6)
