"""Reading comprehension and sequence-to-sequence models written by hand: BiDAF, a convolutional
seq2seq (ConvS2S) and a pointer-generator summariser with coverage."""

from argparse import Namespace

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.parametrizations import weight_norm
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .spec import heldout


def _ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


# --------------------------------------------------------------------------------------------
# BiDAF (Seo et al., 2017)
# --------------------------------------------------------------------------------------------


class Highway(nn.Module):
    def __init__(self, layer_num, size):
        super().__init__()
        self.n = layer_num
        for i in range(self.n):
            setattr(self, f"highway_linear{i}", nn.Sequential(nn.Linear(size, size), nn.ReLU()))
            setattr(self, f"highway_gate{i}", nn.Sequential(nn.Linear(size, size), nn.Sigmoid()))

    def forward(self, x):
        for i in range(self.n):
            h = getattr(self, f"highway_linear{i}")(x)
            g = getattr(self, f"highway_gate{i}")(x)
            x = g * h + (1 - g) * x
        return x


class Linear(nn.Module):
    def __init__(self, in_features, out_features, dropout=0.0):
        super().__init__()
        self.linear = nn.Linear(in_features=in_features, out_features=out_features)
        if dropout > 0:
            self.dropout = nn.Dropout(p=dropout)
        self.reset_params()

    def reset_params(self):
        nn.init.kaiming_normal_(self.linear.weight)
        nn.init.constant_(self.linear.bias, 0)

    def forward(self, x):
        if hasattr(self, "dropout"):
            x = self.dropout(x)
        x = self.linear(x)
        return x


class LSTM(nn.Module):
    """nn.LSTM over a (padded batch, lengths) pair: sorts, packs, runs, unpacks and unsorts."""

    def __init__(
        self,
        input_size,
        hidden_size,
        batch_first=False,
        num_layers=1,
        bidirectional=False,
        dropout=0.2,
    ):
        super().__init__()
        self.rnn = nn.LSTM(
            input_size=input_size,
            hidden_size=hidden_size,
            num_layers=num_layers,
            bidirectional=bidirectional,
            batch_first=batch_first,
        )
        self.reset_params()
        self.dropout = nn.Dropout(p=dropout)

    def reset_params(self):
        suffixes = [""] + (["_reverse"] if self.rnn.bidirectional else [])
        for i in range(self.rnn.num_layers):
            for sfx in suffixes:
                nn.init.orthogonal_(getattr(self.rnn, f"weight_hh_l{i}{sfx}"))
                nn.init.kaiming_normal_(getattr(self.rnn, f"weight_ih_l{i}{sfx}"))
                nn.init.constant_(getattr(self.rnn, f"bias_hh_l{i}{sfx}"), val=0)
                nn.init.constant_(getattr(self.rnn, f"bias_ih_l{i}{sfx}"), val=0)
                # forget gate bias to 1
                getattr(self.rnn, f"bias_hh_l{i}{sfx}").data.chunk(4)[1].fill_(1)

    def forward(self, x):
        x, x_len = x
        x = self.dropout(x)

        x_len_sorted, x_idx = torch.sort(x_len, descending=True)
        x_sorted = x.index_select(dim=0, index=x_idx)
        _, x_ori_idx = torch.sort(x_idx)

        x_packed = pack_padded_sequence(x_sorted, x_len_sorted.cpu(), batch_first=True)
        x_packed, (h, c) = self.rnn(x_packed)

        x = pad_packed_sequence(x_packed, batch_first=True)[0]
        x = x.index_select(dim=0, index=x_ori_idx)
        h = h.permute(1, 0, 2).contiguous().view(-1, h.size(0) * h.size(2)).squeeze()
        h = h.index_select(dim=0, index=x_ori_idx)

        return x, h


class BiDAF(nn.Module):
    def __init__(self, args):
        super().__init__()
        self.args = args

        # 1. Character Embedding Layer
        self.char_emb = nn.Embedding(args.char_vocab_size, args.char_dim, padding_idx=1)
        nn.init.uniform_(self.char_emb.weight, -0.001, 0.001)

        self.char_conv = nn.Sequential(
            nn.Conv2d(1, args.char_channel_size, (args.char_dim, args.char_channel_width)),
            nn.ReLU(),
        )

        # 2. Word Embedding Layer (GloVe in the paper; random and frozen here)
        self.word_emb = nn.Embedding(args.word_vocab_size, args.word_dim)
        self.word_emb.weight.requires_grad = False

        # highway network
        assert self.args.hidden_size * 2 == (self.args.char_channel_size + self.args.word_dim)
        self.highway = Highway(2, args.hidden_size * 2)

        # 3. Contextual Embedding Layer
        self.context_LSTM = LSTM(
            input_size=args.hidden_size * 2,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )

        # 4. Attention Flow Layer
        self.att_weight_c = Linear(args.hidden_size * 2, 1)
        self.att_weight_q = Linear(args.hidden_size * 2, 1)
        self.att_weight_cq = Linear(args.hidden_size * 2, 1)

        # 5. Modeling Layer
        self.modeling_LSTM1 = LSTM(
            input_size=args.hidden_size * 8,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )

        self.modeling_LSTM2 = LSTM(
            input_size=args.hidden_size * 2,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )

        # 6. Output Layer
        self.p1_weight_g = Linear(args.hidden_size * 8, 1, dropout=args.dropout)
        self.p1_weight_m = Linear(args.hidden_size * 2, 1, dropout=args.dropout)
        self.p2_weight_g = Linear(args.hidden_size * 8, 1, dropout=args.dropout)
        self.p2_weight_m = Linear(args.hidden_size * 2, 1, dropout=args.dropout)

        self.output_LSTM = LSTM(
            input_size=args.hidden_size * 2,
            hidden_size=args.hidden_size,
            bidirectional=True,
            batch_first=True,
            dropout=args.dropout,
        )

        self.dropout = nn.Dropout(p=args.dropout)

    def forward(self, c_word, c_char, q_word, q_char, c_lens, q_lens):
        def char_emb_layer(x):
            """(batch, seq_len, word_len) -> (batch, seq_len, char_channel_size)"""
            batch_size = x.size(0)
            # (batch, seq_len, word_len, char_dim)
            x = self.dropout(self.char_emb(x))
            # (batch * seq_len, 1, char_dim, word_len)
            x = x.view(-1, x.size(2), self.args.char_dim).transpose(1, 2).unsqueeze(1)
            # (batch * seq_len, char_channel_size, 1, conv_len) -> (batch * seq_len, char_channel_size, conv_len)
            x = self.char_conv(x).squeeze(2)
            # (batch * seq_len, char_channel_size, 1) -> (batch * seq_len, char_channel_size)
            x = F.max_pool1d(x, x.size(2)).squeeze(2)
            # (batch, seq_len, char_channel_size)
            x = x.view(batch_size, -1, self.args.char_channel_size)

            return x

        def highway_network(x1, x2):
            # (batch, seq_len, char_channel_size + word_dim)
            x = torch.cat([x1, x2], dim=-1)
            return self.highway(x)

        def att_flow_layer(c, q):
            """c: (batch, c_len, hidden_size * 2), q: (batch, q_len, hidden_size * 2)
            -> (batch, c_len, hidden_size * 8)"""
            c_len = c.size(1)
            q_len = q.size(1)

            cq = []
            for i in range(q_len):
                # (batch, 1, hidden_size * 2)
                qi = q.select(1, i).unsqueeze(1)
                # (batch, c_len, 1)
                ci = self.att_weight_cq(c * qi).squeeze()
                cq.append(ci)
            # (batch, c_len, q_len)
            cq = torch.stack(cq, dim=-1)

            # (batch, c_len, q_len)
            s = (
                self.att_weight_c(c).expand(-1, -1, q_len)
                + self.att_weight_q(q).permute(0, 2, 1).expand(-1, c_len, -1)
                + cq
            )

            # (batch, c_len, q_len)
            a = F.softmax(s, dim=2)
            # (batch, c_len, q_len) * (batch, q_len, hidden_size * 2) -> (batch, c_len, hidden_size * 2)
            c2q_att = torch.bmm(a, q)
            # (batch, 1, c_len)
            b = F.softmax(torch.max(s, dim=2)[0], dim=1).unsqueeze(1)
            # (batch, 1, c_len) * (batch, c_len, hidden_size * 2) -> (batch, hidden_size * 2)
            q2c_att = torch.bmm(b, c).squeeze()
            # (batch, c_len, hidden_size * 2) (tiled)
            q2c_att = q2c_att.unsqueeze(1).expand(-1, c_len, -1)

            # (batch, c_len, hidden_size * 8)
            x = torch.cat([c, c2q_att, c * c2q_att, c * q2c_att], dim=-1)
            return x

        def output_layer(g, m, l):  # noqa: E741
            """g: (batch, c_len, hidden_size * 8), m: (batch, c_len ,hidden_size * 2)
            -> p1, p2: (batch, c_len)"""
            # (batch, c_len)
            p1 = (self.p1_weight_g(g) + self.p1_weight_m(m)).squeeze()
            # (batch, c_len, hidden_size * 2)
            m2 = self.output_LSTM((m, l))[0]
            # (batch, c_len)
            p2 = (self.p2_weight_g(g) + self.p2_weight_m(m2)).squeeze()

            return p1, p2

        # 1. Character Embedding Layer
        c_char = char_emb_layer(c_char)
        q_char = char_emb_layer(q_char)
        # 2. Word Embedding Layer
        c_word = self.word_emb(c_word)
        q_word = self.word_emb(q_word)
        # Highway network
        c = highway_network(c_char, c_word)
        q = highway_network(q_char, q_word)
        # 3. Contextual Embedding Layer
        c = self.context_LSTM((c, c_lens))[0]
        q = self.context_LSTM((q, q_lens))[0]
        # 4. Attention Flow Layer
        g = att_flow_layer(c, q)
        # 5. Modeling Layer
        m = self.modeling_LSTM2((self.modeling_LSTM1((g, c_lens))[0], c_lens))[0]
        # 6. Output Layer
        p1, p2 = output_layer(g, m, c_lens)

        # (batch, c_len), (batch, c_len)
        return p1, p2


def _bidaf_example():
    c_word = _ints(80, 2, 12)
    c_char = _ints(30, 2, 12, 6, seed=1)
    q_word = _ints(80, 2, 5, seed=2)
    q_char = _ints(30, 2, 5, 6, seed=3)
    return (c_word, c_char, q_word, q_char, torch.tensor([12, 9]), torch.tensor([4, 5])), {}


@heldout("bidaf_reader", _bidaf_example, edit=("highway", {"layer_num": 3}))
def build_bidaf():
    args = Namespace(
        char_vocab_size=30,
        char_dim=8,
        char_channel_size=16,
        char_channel_width=3,
        word_vocab_size=80,
        word_dim=16,
        hidden_size=16,
        dropout=0.2,
    )
    return BiDAF(args)


# --------------------------------------------------------------------------------------------
# Convolutional sequence to sequence (Gehring et al., 2017), tutorial style, with weight norm on
# the decoder convolutions and the output projection tied to the target embedding
# --------------------------------------------------------------------------------------------


class Encoder(nn.Module):
    def __init__(
        self, input_dim, emb_dim, hid_dim, n_layers, kernel_size, dropout, device, max_length=100
    ):
        super().__init__()

        assert kernel_size % 2 == 1, "Kernel size must be odd!"

        self.device = device

        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)

        self.tok_embedding = nn.Embedding(input_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)

        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)

        self.convs = nn.ModuleList(
            [
                nn.Conv1d(
                    in_channels=hid_dim,
                    out_channels=2 * hid_dim,
                    kernel_size=kernel_size,
                    padding=(kernel_size - 1) // 2,
                )
                for _ in range(n_layers)
            ]
        )

        self.dropout = nn.Dropout(dropout)

    def forward(self, src):
        # src = [batch size, src len]
        batch_size = src.shape[0]
        src_len = src.shape[1]

        # create position tensor
        pos = torch.arange(0, src_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)

        # embed tokens and positions
        tok_embedded = self.tok_embedding(src)
        pos_embedded = self.pos_embedding(pos)

        # combine embeddings by elementwise summing
        embedded = self.dropout(tok_embedded + pos_embedded)

        # pass embedded through linear layer to convert from emb dim to hid dim
        conv_input = self.emb2hid(embedded)

        # permute for convolutional layer
        conv_input = conv_input.permute(0, 2, 1)

        # begin convolutional blocks...
        for i, conv in enumerate(self.convs):  # noqa: B007
            # pass through convolutional layer
            conved = conv(self.dropout(conv_input))

            # pass through GLU activation function
            conved = F.glu(conved, dim=1)

            # apply residual connection
            conved = (conved + conv_input) * self.scale

            # set conv_input to conved for next loop iteration
            conv_input = conved

        # ...end convolutional blocks

        # permute and convert back to emb dim
        conved = self.hid2emb(conved.permute(0, 2, 1))

        # elementwise sum output (conved) and input (embedded) to be used for attention
        combined = (conved + embedded) * self.scale

        return conved, combined


class Decoder(nn.Module):
    def __init__(
        self,
        output_dim,
        emb_dim,
        hid_dim,
        n_layers,
        kernel_size,
        dropout,
        trg_pad_idx,
        device,
        max_length=100,
        use_weight_norm=True,
        share_embed=True,
    ):
        super().__init__()

        self.kernel_size = kernel_size
        self.trg_pad_idx = trg_pad_idx
        self.device = device

        self.scale = torch.sqrt(torch.FloatTensor([0.5])).to(device)

        self.tok_embedding = nn.Embedding(output_dim, emb_dim)
        self.pos_embedding = nn.Embedding(max_length, emb_dim)

        self.emb2hid = nn.Linear(emb_dim, hid_dim)
        self.hid2emb = nn.Linear(hid_dim, emb_dim)

        self.attn_hid2emb = nn.Linear(hid_dim, emb_dim)
        self.attn_emb2hid = nn.Linear(emb_dim, hid_dim)

        self.fc_out = nn.Linear(emb_dim, output_dim)
        if share_embed:
            self.fc_out.weight = self.tok_embedding.weight

        convs = []
        for _ in range(n_layers):
            conv = nn.Conv1d(in_channels=hid_dim, out_channels=2 * hid_dim, kernel_size=kernel_size)
            if use_weight_norm:
                conv = weight_norm(conv, dim=0)
            convs.append(conv)
        self.convs = nn.ModuleList(convs)

        self.dropout = nn.Dropout(dropout)

    def calculate_attention(self, embedded, conved, encoder_conved, encoder_combined):
        # permute and convert back to emb dim
        conved_emb = self.attn_hid2emb(conved.permute(0, 2, 1))
        combined = (conved_emb + embedded) * self.scale

        energy = torch.matmul(combined, encoder_conved.permute(0, 2, 1))
        attention = F.softmax(energy, dim=2)

        attended_encoding = torch.matmul(attention, encoder_combined)

        # convert from emb dim -> hid dim
        attended_encoding = self.attn_emb2hid(attended_encoding)

        # apply residual connection
        attended_combined = (conved + attended_encoding.permute(0, 2, 1)) * self.scale

        return attention, attended_combined

    def forward(self, trg, encoder_conved, encoder_combined):
        batch_size = trg.shape[0]
        trg_len = trg.shape[1]

        # create position tensor
        pos = torch.arange(0, trg_len).unsqueeze(0).repeat(batch_size, 1).to(self.device)

        tok_embedded = self.tok_embedding(trg)
        pos_embedded = self.pos_embedding(pos)

        embedded = self.dropout(tok_embedded + pos_embedded)

        conv_input = self.emb2hid(embedded)
        conv_input = conv_input.permute(0, 2, 1)

        batch_size = conv_input.shape[0]
        hid_dim = conv_input.shape[1]

        for i, conv in enumerate(self.convs):  # noqa: B007
            conv_input = self.dropout(conv_input)

            # need to pad so decoder can't "cheat"
            padding = (
                torch.zeros(batch_size, hid_dim, self.kernel_size - 1)
                .fill_(self.trg_pad_idx)
                .to(self.device)
            )

            padded_conv_input = torch.cat((padding, conv_input), dim=2)

            conved = conv(padded_conv_input)
            conved = F.glu(conved, dim=1)

            attention, conved = self.calculate_attention(
                embedded, conved, encoder_conved, encoder_combined
            )

            conved = (conved + conv_input) * self.scale
            conv_input = conved

        conved = self.hid2emb(conved.permute(0, 2, 1))
        output = self.fc_out(self.dropout(conved))

        return output, attention


class Seq2Seq(nn.Module):
    def __init__(self, encoder, decoder):
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    def forward(self, src, trg):
        # calculate z^u (encoder_conved) and (z^u + e) (encoder_combined)
        encoder_conved, encoder_combined = self.encoder(src)

        # calculate predictions of next words
        output, attention = self.decoder(trg, encoder_conved, encoder_combined)

        return output, attention


INPUT_DIM = 60
OUTPUT_DIM = 70
EMB_DIM = 32
HID_DIM = 48
ENC_LAYERS = 3
DEC_LAYERS = 3
ENC_KERNEL_SIZE = 3
DEC_KERNEL_SIZE = 3
ENC_DROPOUT = 0.25
DEC_DROPOUT = 0.25
TRG_PAD_IDX = 1


@heldout(
    "convs2s_glu_attention",
    lambda: ((_ints(INPUT_DIM, 2, 11), _ints(OUTPUT_DIM, 2, 9, seed=1)), {}),
    edit=("encoder", {"kernel_size": 5}),
)
def build_convs2s():
    device = torch.device("cpu")
    enc = Encoder(INPUT_DIM, EMB_DIM, HID_DIM, ENC_LAYERS, ENC_KERNEL_SIZE, ENC_DROPOUT, device)
    dec = Decoder(
        OUTPUT_DIM, EMB_DIM, HID_DIM, DEC_LAYERS, DEC_KERNEL_SIZE, DEC_DROPOUT, TRG_PAD_IDX, device
    )
    return Seq2Seq(enc, dec)


# --------------------------------------------------------------------------------------------
# Pointer-generator network with coverage (See et al., 2017); the config is a class used as a
# namespace, the encoder and decoder share their embedding
# --------------------------------------------------------------------------------------------


class config:
    vocab_size = 50
    emb_dim = 24
    hidden_dim = 16
    pointer_gen = True
    is_coverage = True
    rand_unif_init_mag = 0.02
    trunc_norm_init_std = 1e-4
    eps = 1e-12


def init_lstm_wt(lstm):
    for names in lstm._all_weights:
        for name in names:
            if name.startswith("weight_"):
                wt = getattr(lstm, name)
                wt.data.uniform_(-config.rand_unif_init_mag, config.rand_unif_init_mag)
            elif name.startswith("bias_"):
                # set forget bias to 1
                bias = getattr(lstm, name)
                n = bias.size(0)
                start, end = n // 4, n // 2
                bias.data.fill_(0.0)
                bias.data[start:end].fill_(1.0)


def init_linear_wt(linear):
    linear.weight.data.normal_(std=config.trunc_norm_init_std)
    if linear.bias is not None:
        linear.bias.data.normal_(std=config.trunc_norm_init_std)


def init_wt_normal(wt):
    wt.data.normal_(std=config.trunc_norm_init_std)


class PGEncoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.embedding = nn.Embedding(config.vocab_size, config.emb_dim)
        init_wt_normal(self.embedding.weight)

        self.lstm = nn.LSTM(
            config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=True
        )
        init_lstm_wt(self.lstm)

        self.W_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2, bias=False)

    # seq_lens should be in descending order
    def forward(self, input, seq_lens):
        embedded = self.embedding(input)

        packed = pack_padded_sequence(embedded, seq_lens, batch_first=True)
        output, hidden = self.lstm(packed)

        encoder_outputs, _ = pad_packed_sequence(output, batch_first=True)  # h dim = B x t_k x n
        encoder_outputs = encoder_outputs.contiguous()

        encoder_feature = encoder_outputs.view(-1, 2 * config.hidden_dim)  # B * t_k x 2*hidden_dim
        encoder_feature = self.W_h(encoder_feature)

        return encoder_outputs, encoder_feature, hidden


class ReduceState(nn.Module):
    def __init__(self):
        super().__init__()

        self.reduce_h = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
        init_linear_wt(self.reduce_h)
        self.reduce_c = nn.Linear(config.hidden_dim * 2, config.hidden_dim)
        init_linear_wt(self.reduce_c)

    def forward(self, hidden):
        h, c = hidden  # h, c dim = 2 x b x hidden_dim
        h_in = h.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
        hidden_reduced_h = F.relu(self.reduce_h(h_in))
        c_in = c.transpose(0, 1).contiguous().view(-1, config.hidden_dim * 2)
        hidden_reduced_c = F.relu(self.reduce_c(c_in))

        return (
            hidden_reduced_h.unsqueeze(0),
            hidden_reduced_c.unsqueeze(0),
        )  # h, c dim = 1 x b x hidden_dim


class PGAttention(nn.Module):
    def __init__(self):
        super().__init__()
        # attention
        if config.is_coverage:
            self.W_c = nn.Linear(1, config.hidden_dim * 2, bias=False)
        self.decode_proj = nn.Linear(config.hidden_dim * 2, config.hidden_dim * 2)
        self.v = nn.Linear(config.hidden_dim * 2, 1, bias=False)

    def forward(self, s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage):
        b, t_k, n = list(encoder_outputs.size())

        dec_fea = self.decode_proj(s_t_hat)  # B x 2*hidden_dim
        dec_fea_expanded = (
            dec_fea.unsqueeze(1).expand(b, t_k, n).contiguous()
        )  # B x t_k x 2*hidden_dim
        dec_fea_expanded = dec_fea_expanded.view(-1, n)  # B * t_k x 2*hidden_dim

        att_features = encoder_feature + dec_fea_expanded  # B * t_k x 2*hidden_dim
        if config.is_coverage:
            coverage_input = coverage.view(-1, 1)  # B * t_k x 1
            coverage_feature = self.W_c(coverage_input)  # B * t_k x 2*hidden_dim
            att_features = att_features + coverage_feature

        e = torch.tanh(att_features)  # B * t_k x 2*hidden_dim
        scores = self.v(e)  # B * t_k x 1
        scores = scores.view(-1, t_k)  # B x t_k

        attn_dist_ = F.softmax(scores, dim=1) * enc_padding_mask  # B x t_k
        normalization_factor = attn_dist_.sum(1, keepdim=True)
        attn_dist = attn_dist_ / normalization_factor

        attn_dist = attn_dist.unsqueeze(1)  # B x 1 x t_k
        c_t = torch.bmm(attn_dist, encoder_outputs)  # B x 1 x n
        c_t = c_t.view(-1, config.hidden_dim * 2)  # B x 2*hidden_dim

        attn_dist = attn_dist.view(-1, t_k)  # B x t_k

        if config.is_coverage:
            coverage = coverage.view(-1, t_k)
            coverage = coverage + attn_dist

        return c_t, attn_dist, coverage


class PGDecoder(nn.Module):
    def __init__(self):
        super().__init__()
        self.attention_network = PGAttention()
        # decoder
        self.embedding = nn.Embedding(config.vocab_size, config.emb_dim)
        init_wt_normal(self.embedding.weight)

        self.x_context = nn.Linear(config.hidden_dim * 2 + config.emb_dim, config.emb_dim)

        self.lstm = nn.LSTM(
            config.emb_dim, config.hidden_dim, num_layers=1, batch_first=True, bidirectional=False
        )
        init_lstm_wt(self.lstm)

        if config.pointer_gen:
            self.p_gen_linear = nn.Linear(config.hidden_dim * 4 + config.emb_dim, 1)

        # p_vocab
        self.out1 = nn.Linear(config.hidden_dim * 3, config.hidden_dim)
        self.out2 = nn.Linear(config.hidden_dim, config.vocab_size)
        init_linear_wt(self.out2)

    def forward(
        self,
        y_t_1,
        s_t_1,
        encoder_outputs,
        encoder_feature,
        enc_padding_mask,
        c_t_1,
        extra_zeros,
        enc_batch_extend_vocab,
        coverage,
    ):
        y_t_1_embd = self.embedding(y_t_1)
        x = self.x_context(torch.cat((c_t_1, y_t_1_embd), 1))
        lstm_out, s_t = self.lstm(x.unsqueeze(1), s_t_1)

        h_decoder, c_decoder = s_t
        s_t_hat = torch.cat(
            (h_decoder.view(-1, config.hidden_dim), c_decoder.view(-1, config.hidden_dim)), 1
        )  # B x 2*hidden_dim
        c_t, attn_dist, coverage_next = self.attention_network(
            s_t_hat, encoder_outputs, encoder_feature, enc_padding_mask, coverage
        )

        p_gen = None
        if config.pointer_gen:
            p_gen_input = torch.cat((c_t, s_t_hat, x), 1)  # B x (2*2*hidden_dim + emb_dim)
            p_gen = self.p_gen_linear(p_gen_input)
            p_gen = torch.sigmoid(p_gen)

        output = torch.cat((lstm_out.view(-1, config.hidden_dim), c_t), 1)  # B x hidden_dim * 3
        output = self.out1(output)  # B x hidden_dim
        output = self.out2(output)  # B x vocab_size
        vocab_dist = F.softmax(output, dim=1)

        if config.pointer_gen:
            vocab_dist_ = p_gen * vocab_dist
            attn_dist_ = (1 - p_gen) * attn_dist

            if extra_zeros is not None:
                vocab_dist_ = torch.cat([vocab_dist_, extra_zeros], 1)

            final_dist = vocab_dist_.scatter_add(1, enc_batch_extend_vocab, attn_dist_)
        else:
            final_dist = vocab_dist

        return final_dist, s_t, c_t, attn_dist, p_gen, coverage_next


class PointerGenerator(nn.Module):
    def __init__(self):
        super().__init__()
        self.encoder = PGEncoder()
        self.decoder = PGDecoder()
        self.reduce_state = ReduceState()

        # shared the embedding between encoder and decoder
        self.decoder.embedding.weight = self.encoder.embedding.weight

    def forward(
        self,
        enc_batch,
        enc_lens,
        enc_padding_mask,
        enc_batch_extend_vocab,
        max_art_oovs=0,
        dec_batch=None,
    ):
        batch_size, t_k = enc_batch.size()
        extra_zeros = None
        if config.pointer_gen and max_art_oovs > 0:
            extra_zeros = torch.zeros(batch_size, max_art_oovs)
        c_t_1 = torch.zeros(batch_size, 2 * config.hidden_dim)
        coverage = torch.zeros(batch_size, t_k) if config.is_coverage else None

        encoder_outputs, encoder_feature, encoder_hidden = self.encoder(enc_batch, enc_lens)
        s_t_1 = self.reduce_state(encoder_hidden)

        step_losses, dists = [], []
        for di in range(dec_batch.size(1) - 1):
            y_t_1 = dec_batch[:, di]  # Teacher forcing
            final_dist, s_t_1, c_t_1, attn_dist, p_gen, next_coverage = self.decoder(
                y_t_1,
                s_t_1,
                encoder_outputs,
                encoder_feature,
                enc_padding_mask,
                c_t_1,
                extra_zeros,
                enc_batch_extend_vocab,
                coverage,
            )
            target = dec_batch[:, di + 1]
            gold_probs = torch.gather(final_dist, 1, target.unsqueeze(1)).squeeze()
            step_loss = -torch.log(gold_probs + config.eps)
            if config.is_coverage:
                step_coverage_loss = torch.sum(torch.min(attn_dist, coverage), 1)
                step_loss = step_loss + step_coverage_loss
                coverage = next_coverage
            step_losses.append(step_loss)
            dists.append(final_dist)

        return torch.stack(dists, 1), torch.stack(step_losses, 1).mean()


def _pointer_gen_example():
    lens = torch.tensor([10, 8, 5])
    mask = (torch.arange(10)[None, :] < lens[:, None]).float()
    enc = _ints(config.vocab_size, 3, 10, seed=4) * mask.long()
    ext = (_ints(config.vocab_size + 3, 3, 10, seed=5)) * mask.long()
    dec = _ints(config.vocab_size, 3, 6, seed=6)
    return (enc, lens, mask, ext), {"max_art_oovs": 3, "dec_batch": dec}


@heldout("pointer_generator_coverage", _pointer_gen_example)
def build_pointer_generator():
    return PointerGenerator()
