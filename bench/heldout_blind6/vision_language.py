"""Captioning and VQA: show-attend-and-tell, MCB (compact bilinear pooling, by count sketch and
FFT) with spatial attention, MFB with question self-attention and image co-attention."""

from collections import OrderedDict

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import heldout, rand


def _ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------------------------
# Show, attend and tell (Xu et al., 2015): CNN grid features, soft attention, gated context,
# an LSTMCell decoding captions sorted by length with a shrinking effective batch
# --------------------------------------------------------------------------------------------


class Encoder(nn.Module):
    """A small CNN standing in for the pretrained ResNet; the last feature map is the grid."""

    def __init__(self, encoded_image_size=7, widths=(16, 32, 64)):
        super().__init__()
        self.enc_image_size = encoded_image_size

        layers = OrderedDict()
        in_ch = 3
        for i, w in enumerate(widths):
            layers[f"conv{i + 1}"] = nn.Conv2d(in_ch, w, 3, stride=2, padding=1, bias=False)
            layers[f"bn{i + 1}"] = nn.BatchNorm2d(w)
            layers[f"relu{i + 1}"] = nn.ReLU(inplace=True)
            in_ch = w
        self.cnn = nn.Sequential(layers)

        # Resize image to fixed size to allow input images of variable size
        self.adaptive_pool = nn.AdaptiveAvgPool2d((encoded_image_size, encoded_image_size))

        self.fine_tune()

    def forward(self, images):
        out = self.cnn(images)  # (batch_size, encoder_dim, image_size/8, image_size/8)
        out = self.adaptive_pool(
            out
        )  # (batch_size, encoder_dim, encoded_image_size, encoded_image_size)
        out = out.permute(
            0, 2, 3, 1
        )  # (batch_size, encoded_image_size, encoded_image_size, encoder_dim)
        return out

    def fine_tune(self, fine_tune=True):
        """Allow or prevent the computation of gradients for the later convolutional blocks."""
        for p in self.cnn.parameters():
            p.requires_grad = False
        # If fine-tuning, only fine-tune the last block
        for c in list(self.cnn.children())[6:]:
            for p in c.parameters():
                p.requires_grad = fine_tune


class Attention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super().__init__()
        self.encoder_att = nn.Linear(
            encoder_dim, attention_dim
        )  # linear layer to transform encoded image
        self.decoder_att = nn.Linear(
            decoder_dim, attention_dim
        )  # linear layer to transform decoder's output
        self.full_att = nn.Linear(
            attention_dim, 1
        )  # linear layer to calculate values to be softmax-ed
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)  # softmax layer to calculate weights

    def forward(self, encoder_out, decoder_hidden):
        att1 = self.encoder_att(encoder_out)  # (batch_size, num_pixels, attention_dim)
        att2 = self.decoder_att(decoder_hidden)  # (batch_size, attention_dim)
        att = self.full_att(self.relu(att1 + att2.unsqueeze(1))).squeeze(
            2
        )  # (batch_size, num_pixels)
        alpha = self.softmax(att)  # (batch_size, num_pixels)
        attention_weighted_encoding = (encoder_out * alpha.unsqueeze(2)).sum(
            dim=1
        )  # (batch_size, encoder_dim)

        return attention_weighted_encoding, alpha


class DecoderWithAttention(nn.Module):
    def __init__(
        self, attention_dim, embed_dim, decoder_dim, vocab_size, encoder_dim=2048, dropout=0.5
    ):
        super().__init__()

        self.encoder_dim = encoder_dim
        self.attention_dim = attention_dim
        self.embed_dim = embed_dim
        self.decoder_dim = decoder_dim
        self.vocab_size = vocab_size
        self.dropout = dropout

        self.attention = Attention(encoder_dim, decoder_dim, attention_dim)  # attention network

        self.embedding = nn.Embedding(vocab_size, embed_dim)  # embedding layer
        self.dropout = nn.Dropout(p=self.dropout)
        self.decode_step = nn.LSTMCell(
            embed_dim + encoder_dim, decoder_dim, bias=True
        )  # decoding LSTMCell
        self.init_h = nn.Linear(
            encoder_dim, decoder_dim
        )  # linear layer to find initial hidden state of LSTMCell
        self.init_c = nn.Linear(
            encoder_dim, decoder_dim
        )  # linear layer to find initial cell state of LSTMCell
        self.f_beta = nn.Linear(
            decoder_dim, encoder_dim
        )  # linear layer to create a sigmoid-activated gate
        self.sigmoid = nn.Sigmoid()
        self.fc = nn.Linear(decoder_dim, vocab_size)  # linear layer to find scores over vocabulary
        self.init_weights()  # initialize some layers with the uniform distribution

    def init_weights(self):
        self.embedding.weight.data.uniform_(-0.1, 0.1)
        self.fc.bias.data.fill_(0)
        self.fc.weight.data.uniform_(-0.1, 0.1)

    def init_hidden_state(self, encoder_out):
        mean_encoder_out = encoder_out.mean(dim=1)
        h = self.init_h(mean_encoder_out)  # (batch_size, decoder_dim)
        c = self.init_c(mean_encoder_out)
        return h, c

    def forward(self, encoder_out, encoded_captions, caption_lengths):
        batch_size = encoder_out.size(0)
        encoder_dim = encoder_out.size(-1)
        vocab_size = self.vocab_size

        # Flatten image
        encoder_out = encoder_out.view(
            batch_size, -1, encoder_dim
        )  # (batch_size, num_pixels, encoder_dim)
        num_pixels = encoder_out.size(1)

        # Sort input data by decreasing lengths; why? apparent below
        caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
        encoder_out = encoder_out[sort_ind]
        encoded_captions = encoded_captions[sort_ind]

        # Embedding
        embeddings = self.embedding(encoded_captions)  # (batch_size, max_caption_length, embed_dim)

        # Initialize LSTM state
        h, c = self.init_hidden_state(encoder_out)  # (batch_size, decoder_dim)

        # We won't decode at the <end> position, since we've finished generating as soon as we
        # generate <end>. So, decoding lengths are actual lengths - 1
        decode_lengths = (caption_lengths - 1).tolist()

        # Create tensors to hold word predicion scores and alphas
        predictions = torch.zeros(
            batch_size, max(decode_lengths), vocab_size, device=encoder_out.device
        )
        alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels, device=encoder_out.device)

        # At each time-step, decode by attention-weighing the encoder's output based on the
        # decoder's previous hidden state output, then generate a new word in the decoder with
        # the previous word and the attention weighted encoding
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])  # noqa: E741
            attention_weighted_encoding, alpha = self.attention(
                encoder_out[:batch_size_t], h[:batch_size_t]
            )
            gate = self.sigmoid(
                self.f_beta(h[:batch_size_t])
            )  # gating scalar, (batch_size_t, encoder_dim)
            attention_weighted_encoding = gate * attention_weighted_encoding
            h, c = self.decode_step(
                torch.cat([embeddings[:batch_size_t, t, :], attention_weighted_encoding], dim=1),
                (h[:batch_size_t], c[:batch_size_t]),
            )  # (batch_size_t, decoder_dim)
            preds = self.fc(self.dropout(h))  # (batch_size_t, vocab_size)
            predictions[:batch_size_t, t, :] = preds
            alphas[:batch_size_t, t, :] = alpha

        return predictions, encoded_captions, decode_lengths, alphas, sort_ind


class ShowAttendTell(nn.Module):
    def __init__(
        self,
        vocab_size,
        attention_dim=32,
        embed_dim=32,
        decoder_dim=32,
        dropout=0.5,
        encoded_image_size=7,
    ):
        super().__init__()
        self.encoder = Encoder(encoded_image_size)
        self.decoder = DecoderWithAttention(
            attention_dim=attention_dim,
            embed_dim=embed_dim,
            decoder_dim=decoder_dim,
            vocab_size=vocab_size,
            encoder_dim=64,
            dropout=dropout,
        )

    def forward(self, imgs, caps, caplens):
        imgs = self.encoder(imgs)
        return self.decoder(imgs, caps, caplens)


@heldout(
    "show_attend_tell",
    lambda: ((rand(3, 3, 56, 56), _ints(40, 3, 9, seed=1), torch.tensor([[9], [6], [8]])), {}),
    edit=("decoder.attention", {"attention_dim": 24}),
)
def build_show_attend_tell():
    return ShowAttendTell(vocab_size=40)


# --------------------------------------------------------------------------------------------
# MCB (Fukui et al., 2016): compact bilinear pooling by count sketch + FFT, used twice, once to
# attend over the image grid and once to fuse the attended image with the question
# --------------------------------------------------------------------------------------------


def signed_sqrt(x):
    return torch.sign(x) * torch.sqrt(torch.abs(x) + 1e-10)


class CompactBilinearPooling(nn.Module):
    """Psi(x) = FFT^-1(FFT(sketch1(x1)) * FFT(sketch2(x2))); the sketches are fixed random."""

    def __init__(self, input_dim1, input_dim2, output_dim, seed=1234):
        super().__init__()
        self.output_dim = output_dim
        g = torch.Generator().manual_seed(seed)
        self.register_buffer("sketch1", self.generate_sketch_matrix(input_dim1, output_dim, g))
        self.register_buffer("sketch2", self.generate_sketch_matrix(input_dim2, output_dim, g))

    @staticmethod
    def generate_sketch_matrix(input_dim, output_dim, generator):
        rand_h = torch.randint(output_dim, (input_dim,), generator=generator)
        rand_s = 2 * torch.randint(2, (input_dim,), generator=generator) - 1
        sketch = torch.zeros(input_dim, output_dim)
        sketch[torch.arange(input_dim), rand_h] = rand_s.float()
        return sketch

    def forward(self, bottom1, bottom2):
        sketch_1 = bottom1.matmul(self.sketch1)
        sketch_2 = bottom2.matmul(self.sketch2)
        fft1 = torch.fft.rfft(sketch_1, dim=-1)
        fft2 = torch.fft.rfft(sketch_2, dim=-1)
        cbp = torch.fft.irfft(fft1 * fft2, n=self.output_dim, dim=-1)
        return cbp * self.output_dim


class QuestionEncoder(nn.Module):
    def __init__(self, vocab_size, embed_dim, hidden_dim, num_layers=2, dropout=0.3):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_dim, padding_idx=0)
        self.tanh = nn.Tanh()
        self.lstm = nn.LSTM(
            embed_dim, hidden_dim, num_layers=num_layers, batch_first=True, dropout=dropout
        )
        self.out_dim = hidden_dim * num_layers

    def forward(self, question, lengths):
        x = self.tanh(self.embedding(question))
        packed = nn.utils.rnn.pack_padded_sequence(
            x, lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, (h, _) = self.lstm(packed)
        return torch.cat(list(h), dim=1)  # concatenate the last states of both layers


class MCBAttention(nn.Module):
    def __init__(self, img_dim, q_dim, mcb_dim, hidden=32, glimpses=2):
        super().__init__()
        self.glimpses = glimpses
        self.mcb = CompactBilinearPooling(img_dim, q_dim, mcb_dim, seed=1)
        self.conv1 = nn.Conv2d(mcb_dim, hidden, 1)
        self.conv2 = nn.Conv2d(hidden, glimpses, 1)

    def forward(self, img, q):
        B, C, H, W = img.shape
        q_tiled = q[:, None, None, :].expand(B, H, W, q.size(1))
        fused = self.mcb(img.permute(0, 2, 3, 1), q_tiled)  # (B, H, W, mcb_dim)
        fused = F.normalize(signed_sqrt(fused).view(B, -1), dim=1).view(B, H, W, -1)
        att = self.conv2(F.relu(self.conv1(fused.permute(0, 3, 1, 2))))  # (B, glimpses, H, W)
        att = F.softmax(att.view(B, self.glimpses, -1), dim=-1)
        feats = img.view(B, C, -1)
        glimpses = [
            torch.bmm(feats, att[:, g].unsqueeze(2)).squeeze(2) for g in range(self.glimpses)
        ]
        return torch.cat(glimpses, dim=1), att.view(B, self.glimpses, H, W)


class MCBVQA(nn.Module):
    def __init__(
        self, vocab_size, num_answers, img_dim=32, embed_dim=24, q_hidden=16, mcb_dim=64, glimpses=2
    ):
        super().__init__()
        self.question = QuestionEncoder(vocab_size, embed_dim, q_hidden)
        q_dim = self.question.out_dim
        self.attention = MCBAttention(img_dim, q_dim, mcb_dim, glimpses=glimpses)
        self.fusion = CompactBilinearPooling(img_dim * glimpses, q_dim, mcb_dim, seed=2)
        self.dropout = nn.Dropout(0.3)
        self.classifier = nn.Linear(mcb_dim, num_answers)

    def forward(self, img_features, question, q_lengths):
        # img_features: pre-extracted (batch, img_dim, H, W) grid features
        img_features = F.normalize(img_features, dim=1)
        q = self.question(question, q_lengths)
        v, att = self.attention(img_features, q)
        z = self.fusion(v, q)
        z = F.normalize(signed_sqrt(z), dim=1)
        return self.classifier(self.dropout(z)), att


def _vqa_example(seed=0):
    img = rand(2, 32, 7, 7, seed=seed).relu()
    lengths = torch.tensor([8, 5])
    q = (_ints(29, 2, 8, seed=seed + 1) + 1) * (torch.arange(8)[None, :] < lengths[:, None])
    return (img, q, lengths), {}


@heldout("mcb_vqa_attention", _vqa_example)
def build_mcb_vqa():
    return MCBVQA(vocab_size=30, num_answers=20)


# --------------------------------------------------------------------------------------------
# MFB (Yu et al., 2017): multi-modal factorised bilinear pooling (expand by k, sum-pool back),
# question self-attention and question-guided image attention
# --------------------------------------------------------------------------------------------


class MFB(nn.Module):
    def __init__(self, img_feat_size, ques_feat_size, k=5, o=64, dropout=0.1):
        super().__init__()
        self.k = k
        self.o = o
        self.proj_i = nn.Linear(img_feat_size, k * o)
        self.proj_q = nn.Linear(ques_feat_size, k * o)
        self.dropout = nn.Dropout(dropout)
        self.pool = nn.AvgPool1d(k, stride=k)

    def forward(self, img_feat, ques_feat):
        """img_feat: (N, C, img_feat_size) and ques_feat: (N, 1, ques_feat_size) -> (N, C, o)"""
        batch_size = img_feat.shape[0]
        img_feat = self.proj_i(img_feat)  # (N, C, K*O)
        ques_feat = self.proj_q(ques_feat)  # (N, 1, K*O)

        exp_out = img_feat * ques_feat  # (N, C, K*O)
        exp_out = self.dropout(exp_out)
        z = self.pool(exp_out) * self.k  # (N, C, O)
        z = torch.sqrt(F.relu(z)) - torch.sqrt(F.relu(-z))  # power normalisation
        z = F.normalize(z.view(batch_size, -1))  # l2 normalisation
        z = z.view(batch_size, -1, self.o)
        return z


class QAtt(nn.Module):
    def __init__(self, hidden, glimpses=2, mid=32, dropout=0.1):
        super().__init__()
        self.mlp = nn.Sequential(
            nn.Linear(hidden, mid),
            nn.ReLU(inplace=True),
            nn.Dropout(dropout),
            nn.Linear(mid, glimpses),
        )
        self.glimpses = glimpses

    def forward(self, ques_feat, mask):
        """ques_feat: (N, T, hidden) -> (N, glimpses * hidden)"""
        maps = self.mlp(ques_feat)  # (N, T, G)
        maps = maps.masked_fill(~mask.unsqueeze(2), -1e9)
        maps = F.softmax(maps, dim=1)
        feats = [torch.sum(maps[:, :, i : i + 1] * ques_feat, dim=1) for i in range(self.glimpses)]
        return torch.cat(feats, dim=1)


class IAtt(nn.Module):
    def __init__(
        self, img_feat_size, ques_att_feat_size, k=5, o=64, glimpses=2, mid=32, dropout=0.1
    ):
        super().__init__()
        self.mfb = MFB(img_feat_size, ques_att_feat_size, k=k, o=o, dropout=dropout)
        self.mlp = nn.Sequential(
            nn.Linear(o, mid), nn.ReLU(inplace=True), nn.Dropout(dropout), nn.Linear(mid, glimpses)
        )
        self.glimpses = glimpses

    def forward(self, img_feat, ques_att_feat):
        """img_feat: (N, C, img_feat_size), ques_att_feat: (N, ques_att_feat_size)"""
        z = self.mfb(img_feat, ques_att_feat.unsqueeze(1))  # (N, C, O)
        maps = F.softmax(self.mlp(z), dim=1)  # (N, C, G)
        feats = [torch.sum(maps[:, :, i : i + 1] * img_feat, dim=1) for i in range(self.glimpses)]
        return torch.cat(feats, dim=1)


class MFBCoAtt(nn.Module):
    def __init__(self, __C, vocab_size, answer_size):
        super().__init__()
        self.__C = __C
        self.embedding = nn.Embedding(vocab_size, __C.WORD_EMBED_SIZE, padding_idx=0)
        self.lstm = nn.LSTM(__C.WORD_EMBED_SIZE, __C.LSTM_OUT_SIZE, num_layers=1, batch_first=True)
        self.dropout_lstm = nn.Dropout(__C.DROPOUT_R)
        self.q_att = QAtt(__C.LSTM_OUT_SIZE, __C.Q_GLIMPSES)
        self.i_att = IAtt(
            __C.IMG_FEAT_SIZE,
            __C.LSTM_OUT_SIZE * __C.Q_GLIMPSES,
            __C.MFB_K,
            __C.MFB_O,
            __C.I_GLIMPSES,
        )
        self.mfb = MFB(
            __C.IMG_FEAT_SIZE * __C.I_GLIMPSES,
            __C.LSTM_OUT_SIZE * __C.Q_GLIMPSES,
            k=__C.MFB_K,
            o=__C.MFB_O,
            dropout=__C.DROPOUT_R,
        )
        self.proj = nn.Linear(__C.MFB_O, answer_size)

    def forward(self, img_feat, ques_ix):
        """img_feat: (N, C, img_feat_size) region features; ques_ix: (N, T) word ids, 0 = pad"""
        mask = ques_ix != 0
        ques_feat = self.embedding(ques_ix)
        ques_feat, _ = self.lstm(ques_feat)
        ques_feat = self.dropout_lstm(ques_feat)
        ques_att_feat = self.q_att(ques_feat, mask)
        fuse_img = self.i_att(img_feat, ques_att_feat)
        z = self.mfb(fuse_img.unsqueeze(1), ques_att_feat.unsqueeze(1)).squeeze(1)
        return torch.sigmoid(self.proj(z))


class Cfgs:
    WORD_EMBED_SIZE = 24
    LSTM_OUT_SIZE = 32
    DROPOUT_R = 0.1
    IMG_FEAT_SIZE = 40
    MFB_K = 5
    MFB_O = 48
    Q_GLIMPSES = 2
    I_GLIMPSES = 2


def _mfb_example():
    img = rand(2, 12, 40, seed=3)
    q = _ints(29, 2, 10, seed=4) + 1
    q[1, 7:] = 0
    return (img, q), {}


@heldout(
    "mfb_coattention_vqa",
    _mfb_example,
)
def build_mfb():
    return MFBCoAtt(Cfgs(), vocab_size=30, answer_size=25)
