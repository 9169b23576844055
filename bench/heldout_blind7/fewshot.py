"""Few-shot learning: prototypical, relation and matching networks."""

from __future__ import annotations

import argparse

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand


def conv_block(in_channels, out_channels):
    """The Conv-4 block every few-shot paper reuses."""
    bn = nn.BatchNorm2d(out_channels)
    nn.init.uniform_(bn.weight)
    return nn.Sequential(
        nn.Conv2d(in_channels, out_channels, 3, padding=1), bn, nn.ReLU(), nn.MaxPool2d(2)
    )


# ----------------------------------------------------------------------------------------------
# Prototypical networks (Snell et al. 2017)
# ----------------------------------------------------------------------------------------------


class ProtoNetEncoder(nn.Module):
    def __init__(self, x_dim=1, hid_dim=64, z_dim=64):
        super().__init__()
        self.encoder = nn.Sequential(
            conv_block(x_dim, hid_dim),
            conv_block(hid_dim, hid_dim),
            conv_block(hid_dim, hid_dim),
            conv_block(hid_dim, z_dim),
        )

    def forward(self, x):
        x = self.encoder(x)
        return x.view(x.size(0), -1)


def euclidean_dist(x, y):
    n = x.size(0)
    m = y.size(0)
    d = x.size(1)
    assert d == y.size(1)
    x = x.unsqueeze(1).expand(n, m, d)
    y = y.unsqueeze(0).expand(n, m, d)
    return torch.pow(x - y, 2).sum(2)


class PrototypicalNetwork(nn.Module):
    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder

    def forward(self, support, query):
        # support: (n_way, n_shot, C, H, W), query: (n_way * n_query, C, H, W)
        n_class, n_support = support.size(0), support.size(1)
        x = torch.cat([support.view(n_class * n_support, *support.size()[2:]), query], 0)
        z = self.encoder(x)
        z_dim = z.size(-1)
        z_proto = z[: n_class * n_support].view(n_class, n_support, z_dim).mean(1)
        zq = z[n_class * n_support :]
        dists = euclidean_dist(zq, z_proto)
        return F.log_softmax(-dists, dim=1)


@heldout("protonet_omniglot", lambda: ((rand(5, 2, 1, 28, 28), rand(10, 1, 28, 28, seed=1)), {}))
def build_protonet():
    return PrototypicalNetwork(ProtoNetEncoder(1, 32, 32))


# ----------------------------------------------------------------------------------------------
# Relation network (Sung et al. 2018): embedding module and a learned relation module
# ----------------------------------------------------------------------------------------------


class CNNEncoder(nn.Module):
    def __init__(self, feature_dim=64):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(3, feature_dim, kernel_size=3, padding=0),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.layer2 = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim, kernel_size=3, padding=0),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.layer3 = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim, kernel_size=3, padding=1),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
        )
        self.layer4 = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim, kernel_size=3, padding=1),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
        )

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = self.layer3(out)
        out = self.layer4(out)
        return out


class RelationNetwork(nn.Module):
    def __init__(self, input_size, hidden_size, feature_dim=64):
        super().__init__()
        self.layer1 = nn.Sequential(
            nn.Conv2d(feature_dim * 2, feature_dim, kernel_size=3, padding=0),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.layer2 = nn.Sequential(
            nn.Conv2d(feature_dim, feature_dim, kernel_size=3, padding=1),
            nn.BatchNorm2d(feature_dim, momentum=1, affine=True),
            nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.fc1 = nn.Linear(input_size, hidden_size)
        self.fc2 = nn.Linear(hidden_size, 1)

    def forward(self, x):
        out = self.layer1(x)
        out = self.layer2(out)
        out = out.view(out.size(0), -1)
        out = F.relu(self.fc1(out))
        out = torch.sigmoid(self.fc2(out))
        return out


def weights_init(m):
    classname = m.__class__.__name__
    if classname.find("Conv") != -1:
        n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
        m.weight.data.normal_(0, (2.0 / n) ** 0.5)
        if m.bias is not None:
            m.bias.data.zero_()
    elif classname.find("BatchNorm") != -1:
        m.weight.data.fill_(1)
        m.bias.data.zero_()
    elif classname.find("Linear") != -1:
        m.weight.data.normal_(0, 0.01)
        m.bias.data = torch.ones(m.bias.data.size())


class RelationNet(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args
        self.feature_encoder = CNNEncoder(args.feature_dim)
        self.relation_network = RelationNetwork(
            args.feature_dim * 1 * 1, args.relation_dim, args.feature_dim
        )
        self.feature_encoder.apply(weights_init)
        self.relation_network.apply(weights_init)

    def forward(self, sample_images, batch_images):
        C = self.args.class_num
        S = self.args.sample_num_per_class
        fd = self.args.feature_dim
        sample_features = self.feature_encoder(sample_images)
        h, w = sample_features.shape[-2:]
        sample_features = sample_features.view(C, S, fd, h, w).sum(1)
        batch_features = self.feature_encoder(batch_images)
        nb = batch_features.size(0)
        sample_features_ext = sample_features.unsqueeze(0).repeat(nb, 1, 1, 1, 1)
        batch_features_ext = batch_features.unsqueeze(0).repeat(C, 1, 1, 1, 1)
        batch_features_ext = torch.transpose(batch_features_ext, 0, 1)
        relation_pairs = torch.cat((sample_features_ext, batch_features_ext), 2).view(
            -1, fd * 2, h, w
        )
        return self.relation_network(relation_pairs).view(-1, C)


def _relation_args():
    parser = argparse.ArgumentParser(description="One Shot Visual Recognition")
    parser.add_argument("-f", "--feature_dim", type=int, default=64)
    parser.add_argument("-r", "--relation_dim", type=int, default=8)
    parser.add_argument("-w", "--class_num", type=int, default=5)
    parser.add_argument("-s", "--sample_num_per_class", type=int, default=1)
    parser.add_argument("-b", "--batch_num_per_class", type=int, default=2)
    return parser.parse_args(["-f", "24", "-s", "2"])


@heldout(
    "relation_net_miniimagenet",
    lambda: ((rand(10, 3, 42, 42), rand(10, 3, 42, 42, seed=1)), {}),
    edit=(
        "relation_network.layer1.0",
        {"out_channels": 24, "kernel_size": 3, "padding": 0, "bias": False},
    ),
)
def build_relation_net():
    return RelationNet(_relation_args())


# ----------------------------------------------------------------------------------------------
# Matching networks (Vinyals et al. 2016) with full context embeddings
# ----------------------------------------------------------------------------------------------


class Classifier(nn.Module):
    def __init__(self, layer_size=64, num_channels=1, keep_prob=1.0, image_size=28):
        super().__init__()
        self.layer1 = self._block(num_channels, layer_size, keep_prob)
        self.layer2 = self._block(layer_size, layer_size, keep_prob)
        self.layer3 = self._block(layer_size, layer_size, keep_prob)
        self.layer4 = self._block(layer_size, layer_size, keep_prob)
        finalSize = int(image_size // 16)
        self.outSize = finalSize * finalSize * layer_size

    @staticmethod
    def _block(in_planes, out_planes, keep_prob):
        seq = nn.Sequential()
        seq.add_module(
            "conv", nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=1, padding=1, bias=True)
        )
        seq.add_module("relu", nn.ReLU(inplace=True))
        seq.add_module("bn", nn.BatchNorm2d(out_planes))
        seq.add_module("maxpool", nn.MaxPool2d(kernel_size=2, stride=2))
        seq.add_module("dropout", nn.Dropout(1 - keep_prob))
        return seq

    def forward(self, image_input):
        x = self.layer1(image_input)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)
        return x.view(x.size()[0], -1)


class BidirectionalLSTM(nn.Module):
    def __init__(self, layer_sizes, batch_size, vector_dim):
        super().__init__()
        self.batch_size = batch_size
        self.hidden_size = layer_sizes[0]
        self.vector_dim = vector_dim
        self.num_layers = len(layer_sizes)
        self.lstm = nn.LSTM(
            input_size=self.vector_dim,
            num_layers=self.num_layers,
            hidden_size=self.hidden_size,
            bidirectional=True,
        )

    def forward(self, inputs):
        # inputs: (seq, batch, dim)
        output, _ = self.lstm(inputs)
        return output


class AttentionalClassify(nn.Module):
    def forward(self, similarities, support_set_y):
        softmax = nn.Softmax(dim=1)
        softmax_similarities = softmax(similarities)
        preds = softmax_similarities.unsqueeze(1).bmm(support_set_y).squeeze(1)
        return preds


class DistanceNetwork(nn.Module):
    def forward(self, support_set, input_image):
        eps = 1e-10
        similarities = []
        for support_image in support_set:
            sum_support = torch.sum(torch.pow(support_image, 2), 1)
            support_magnitude = sum_support.clamp(eps, float("inf")).rsqrt()
            dot_product = input_image.unsqueeze(1).bmm(support_image.unsqueeze(2)).squeeze()
            cosine_similarity = dot_product * support_magnitude
            similarities.append(cosine_similarity)
        similarities = torch.stack(similarities)
        return similarities.t()


class MatchingNetwork(nn.Module):
    def __init__(
        self,
        keep_prob=1.0,
        batch_size=2,
        num_channels=1,
        fce=False,
        num_classes_per_set=5,
        num_samples_per_class=1,
        image_size=28,
        layer_size=64,
    ):
        super().__init__()
        self.batch_size = batch_size
        self.fce = fce
        self.g = Classifier(
            layer_size=layer_size,
            num_channels=num_channels,
            keep_prob=keep_prob,
            image_size=image_size,
        )
        if self.fce:
            self.lstm = BidirectionalLSTM(
                layer_sizes=[layer_size // 2], batch_size=self.batch_size, vector_dim=self.g.outSize
            )
        self.dn = DistanceNetwork()
        self.classify = AttentionalClassify()

    def forward(self, support_set_images, support_set_labels_one_hot, target_image):
        encoded_images = []
        for i in range(support_set_images.size(1)):
            gen_encode = self.g(support_set_images[:, i, :, :, :])
            encoded_images.append(gen_encode)
        gen_encode = self.g(target_image)
        encoded_images.append(gen_encode)
        output = torch.stack(encoded_images)
        if self.fce:
            output = self.lstm(output)
        similarities = self.dn(support_set=output[:-1], input_image=output[-1])
        return self.classify(similarities, support_set_y=support_set_labels_one_hot)


def _matching_example():
    g = torch.Generator().manual_seed(0)
    labels = torch.randint(0, 5, (2, 5), generator=g)
    return (rand(2, 5, 1, 28, 28), F.one_hot(labels, 5).float(), rand(2, 1, 28, 28, seed=2)), {}


@heldout("matching_net_fce", _matching_example)
def build_matching_net():
    return MatchingNetwork(
        keep_prob=0.9, batch_size=2, fce=True, num_classes_per_set=5, layer_size=32
    )
