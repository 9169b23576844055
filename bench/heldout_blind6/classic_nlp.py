"""Classic NLP written by hand: a char-CNN + BiLSTM-CRF tagger, a hierarchical attention network,
and a character-aware (char-CNN + highway) LSTM language model."""

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from .spec import heldout

# --------------------------------------------------------------------------------------------
# BiLSTM-CRF tagger with character CNN features (Ma & Hovy, 2016), batched Viterbi in forward
# --------------------------------------------------------------------------------------------

START_TAG = "<START>"
STOP_TAG = "<STOP>"
PAD_IDX = 0


def log_sum_exp(vec, dim=-1):
    max_score = vec.max(dim)[0]
    return max_score + torch.log(torch.sum(torch.exp(vec - max_score.unsqueeze(dim)), dim))


class CharCNN(nn.Module):
    def __init__(self, n_chars, char_dim=16, n_filters=16, kernel_size=3, dropout=0.5):
        super().__init__()
        self.char_embeds = nn.Embedding(n_chars, char_dim, padding_idx=PAD_IDX)
        self.conv = nn.Conv1d(char_dim, n_filters, kernel_size, padding=kernel_size // 2)
        self.dropout = nn.Dropout(dropout)
        self.out_dim = n_filters

    def forward(self, chars):
        # chars: (batch, seq_len, word_len)
        B, T, W = chars.size()
        x = self.dropout(self.char_embeds(chars.view(B * T, W)))  # (B*T, W, char_dim)
        x = self.conv(x.transpose(1, 2))  # (B*T, n_filters, W)
        x, _ = torch.max(x, dim=2)
        return x.view(B, T, -1)


class CRF(nn.Module):
    def __init__(self, tag_to_ix):
        super().__init__()
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)
        # Matrix of transition parameters. Entry i,j is the score of transitioning *to* i *from* j.
        self.transitions = nn.Parameter(torch.randn(self.tagset_size, self.tagset_size))
        # These two statements enforce the constraint that we never transfer to the start tag and
        # we never transfer from the stop tag
        self.transitions.data[tag_to_ix[START_TAG], :] = -10000
        self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000

    def _forward_alg(self, feats, mask):
        B, T, K = feats.shape
        alphas = feats.new_full((B, K), -10000.0)
        alphas[:, self.tag_to_ix[START_TAG]] = 0.0
        for t in range(T):
            # (B, 1, K_from) + (1, K_to, K_from) + (B, K_to, 1)
            scores = alphas.unsqueeze(1) + self.transitions.unsqueeze(0) + feats[:, t].unsqueeze(2)
            new_alphas = log_sum_exp(scores, dim=2)
            m = mask[:, t].unsqueeze(1)
            alphas = torch.where(m, new_alphas, alphas)
        terminal = alphas + self.transitions[self.tag_to_ix[STOP_TAG]]
        return log_sum_exp(terminal, dim=1)

    def _score_sentence(self, feats, tags, mask):
        B, T, K = feats.shape
        score = feats.new_zeros(B)
        start = torch.full((B, 1), self.tag_to_ix[START_TAG], dtype=torch.long, device=tags.device)
        tags = torch.cat([start, tags], dim=1)
        for t in range(T):
            emit = feats[:, t].gather(1, tags[:, t + 1].unsqueeze(1)).squeeze(1)
            trans = self.transitions[tags[:, t + 1], tags[:, t]]
            score = score + (emit + trans) * mask[:, t]
        last = tags.gather(1, mask.long().sum(1, keepdim=True)).squeeze(1)
        score = score + self.transitions[self.tag_to_ix[STOP_TAG], last]
        return score

    def neg_log_likelihood(self, feats, tags, mask):
        forward_score = self._forward_alg(feats, mask)
        gold_score = self._score_sentence(feats, tags, mask)
        return (forward_score - gold_score).mean()

    def viterbi_decode(self, feats, mask):
        B, T, K = feats.shape
        backpointers = []

        # Initialize the viterbi variables in log space
        forward_var = feats.new_full((B, K), -10000.0)
        forward_var[:, self.tag_to_ix[START_TAG]] = 0
        identity = torch.arange(K, device=feats.device).expand(B, K)

        for t in range(T):
            # next_tag_var[b, i, j] holds the viterbi variable for tag j at the previous step,
            # plus the score of transitioning from tag j to tag i.
            next_tag_var = forward_var.unsqueeze(1) + self.transitions.unsqueeze(0)
            viterbivars_t, bptrs_t = next_tag_var.max(dim=2)
            m = mask[:, t].unsqueeze(1)
            forward_var = torch.where(m, viterbivars_t + feats[:, t], forward_var)
            backpointers.append(torch.where(m, bptrs_t, identity))

        # Transition to STOP_TAG
        terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
        path_score, best_tag_id = terminal_var.max(dim=1)

        # Follow the back pointers to decode the best path.
        best_path = [best_tag_id]
        for bptrs_t in reversed(backpointers):
            best_tag_id = bptrs_t.gather(1, best_tag_id.unsqueeze(1)).squeeze(1)
            best_path.append(best_tag_id)
        # Pop off the start tag (we dont want to return that to the caller)
        best_path.pop()
        best_path.reverse()
        return path_score, torch.stack(best_path, dim=1)


class BiLSTM_CRF(nn.Module):
    def __init__(
        self,
        vocab_size,
        tag_to_ix,
        embedding_dim,
        hidden_dim,
        char_vocab_size=None,
        char_filters=16,
        dropout=0.5,
    ):
        super().__init__()
        self.embedding_dim = embedding_dim
        self.hidden_dim = hidden_dim
        self.vocab_size = vocab_size
        self.tag_to_ix = tag_to_ix
        self.tagset_size = len(tag_to_ix)

        self.word_embeds = nn.Embedding(vocab_size, embedding_dim, padding_idx=PAD_IDX)
        if char_vocab_size is not None:
            self.char_cnn = CharCNN(char_vocab_size, n_filters=char_filters, dropout=dropout)
            lstm_in = embedding_dim + char_filters
        else:
            self.char_cnn = None
            lstm_in = embedding_dim
        self.dropout = nn.Dropout(dropout)
        self.lstm = nn.LSTM(
            lstm_in, hidden_dim // 2, num_layers=1, bidirectional=True, batch_first=True
        )

        # Maps the output of the LSTM into tag space.
        self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
        self.crf = CRF(tag_to_ix)

    def _get_lstm_features(self, sentence, chars, mask):
        embeds = self.word_embeds(sentence)
        if self.char_cnn is not None:
            embeds = torch.cat([embeds, self.char_cnn(chars)], dim=2)
        embeds = self.dropout(embeds)
        lengths = mask.long().sum(1).cpu()
        packed = pack_padded_sequence(embeds, lengths, batch_first=True, enforce_sorted=False)
        lstm_out, _ = self.lstm(packed)
        lstm_out, _ = pad_packed_sequence(lstm_out, batch_first=True, total_length=sentence.size(1))
        lstm_feats = self.hidden2tag(self.dropout(lstm_out))
        return lstm_feats

    def neg_log_likelihood(self, sentence, chars, tags, mask):
        feats = self._get_lstm_features(sentence, chars, mask)
        return self.crf.neg_log_likelihood(feats, tags, mask)

    def forward(self, sentence, chars, mask):  # dont confuse this with _forward_alg above.
        # Get the emission scores from the BiLSTM
        lstm_feats = self._get_lstm_features(sentence, chars, mask)

        # Find the best path, given the features.
        score, tag_seq = self.crf.viterbi_decode(lstm_feats, mask)
        return score, tag_seq


def _ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


def _tagger_example():
    lengths = torch.tensor([7, 4, 6])
    mask = torch.arange(7)[None, :] < lengths[:, None]
    sentence = (_ints(49, 3, 7) + 1) * mask
    chars = (_ints(29, 3, 7, 6, seed=1) + 1) * mask[:, :, None]
    return (sentence, chars, mask), {}


@heldout("bilstm_crf_tagger", _tagger_example)
def build_bilstm_crf():
    tag_to_ix = {"O": 0, "B-PER": 1, "I-PER": 2, "B-LOC": 3, "I-LOC": 4, START_TAG: 5, STOP_TAG: 6}
    return BiLSTM_CRF(50, tag_to_ix, embedding_dim=24, hidden_dim=32, char_vocab_size=30)


# --------------------------------------------------------------------------------------------
# Hierarchical Attention Network (Yang et al., 2016): word GRU + attention -> sentence vectors,
# sentence GRU + attention -> document vector
# --------------------------------------------------------------------------------------------


class AttentionWithContext(nn.Module):
    """u_it = tanh(W h_it + b); a_it = softmax(u_it . u_w); s_i = sum_t a_it h_it"""

    def __init__(self, hidden_size):
        super().__init__()
        self.proj = nn.Linear(hidden_size, hidden_size)
        self.context = nn.Parameter(torch.empty(hidden_size, 1))
        nn.init.normal_(self.context, 0.0, 0.05)

    def forward(self, h, mask=None):
        u = torch.tanh(self.proj(h))
        scores = torch.matmul(u, self.context).squeeze(-1)
        if mask is not None:
            scores = scores.masked_fill(~mask, -1e9)
        alpha = F.softmax(scores, dim=-1)
        return torch.sum(alpha.unsqueeze(-1) * h, dim=1), alpha


class WordAttNet(nn.Module):
    def __init__(self, vocab_size, embed_size=50, hidden_size=50):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.gru = nn.GRU(embed_size, hidden_size, bidirectional=True, batch_first=True)
        self.attention = AttentionWithContext(2 * hidden_size)

    def forward(self, x, mask):
        output, _ = self.gru(self.embedding(x))
        return self.attention(output, mask)


class SentAttNet(nn.Module):
    def __init__(self, sent_hidden_size=50, word_hidden_size=50, num_classes=14):
        super().__init__()
        self.gru = nn.GRU(
            2 * word_hidden_size, sent_hidden_size, bidirectional=True, batch_first=True
        )
        self.attention = AttentionWithContext(2 * sent_hidden_size)
        self.fc = nn.Linear(2 * sent_hidden_size, num_classes)

    def forward(self, x, mask):
        output, _ = self.gru(x)
        doc, alpha = self.attention(output, mask)
        return self.fc(doc), alpha


class HierAttNet(nn.Module):
    def __init__(self, word_hidden_size, sent_hidden_size, num_classes, vocab_size, embed_size=50):
        super().__init__()
        self.word_hidden_size = word_hidden_size
        self.sent_hidden_size = sent_hidden_size
        self.word_att_net = WordAttNet(vocab_size, embed_size, word_hidden_size)
        self.sent_att_net = SentAttNet(sent_hidden_size, word_hidden_size, num_classes)

    def forward(self, docs):
        # docs: (batch, max_sents, max_words) of word ids, 0 is padding
        B, S, W = docs.shape
        word_mask = docs.ne(0)
        sent_vecs, word_alpha = self.word_att_net(docs.view(B * S, W), word_mask.view(B * S, W))
        sent_vecs = sent_vecs.view(B, S, -1)
        sent_mask = word_mask.any(dim=-1)
        logits, sent_alpha = self.sent_att_net(sent_vecs, sent_mask)
        return logits, word_alpha.view(B, S, W), sent_alpha


def _han_example():
    docs = _ints(59, 2, 4, 9, seed=2) + 1
    docs[0, 3, :] = 0  # a short document
    docs[1, :, 6:] = 0  # short sentences
    return (docs,), {}


@heldout(
    "hierarchical_attention_net",
    _han_example,
)
def build_han():
    return HierAttNet(
        word_hidden_size=16, sent_hidden_size=16, num_classes=5, vocab_size=60, embed_size=32
    )


# --------------------------------------------------------------------------------------------
# Character-aware neural LM (Kim et al., 2016): char CNN with many widths -> highway -> LSTM
# --------------------------------------------------------------------------------------------


class TDNN(nn.Module):
    """Time-delay (1-D over characters) convolutions, one per width, max-pooled over time."""

    def __init__(self, char_emb_dim, kernels, feature_maps):
        super().__init__()
        self.kernels = nn.ModuleList(
            [
                nn.Conv2d(1, out_dim, kernel_size=(kernel_w, char_emb_dim))
                for kernel_w, out_dim in zip(kernels, feature_maps)
            ]
        )

    def forward(self, x):
        # x: (batch * seq_len, word_len, char_emb_dim)
        x = x.unsqueeze(1)
        xs = [torch.tanh(kernel(x)).squeeze(3) for kernel in self.kernels]
        xs = [F.max_pool1d(x_, x_.size(2)).squeeze(2) for x_ in xs]
        return torch.cat(xs, 1)


class HighwayNetwork(nn.Module):
    def __init__(self, size, num_layers=1, f=F.relu, carry_bias=-2.0):
        super().__init__()
        self.num_layers = num_layers
        self.nonlinear = nn.ModuleList([nn.Linear(size, size) for _ in range(num_layers)])
        self.gate = nn.ModuleList([nn.Linear(size, size) for _ in range(num_layers)])
        for gate in self.gate:
            gate.bias.data.fill_(carry_bias)
        self.f = f

    def forward(self, x):
        """y = t * f(W_H x) + (1 - t) * x, with t = sigmoid(W_T x + b_T)"""
        for layer in range(self.num_layers):
            gate = torch.sigmoid(self.gate[layer](x))
            nonlinear = self.f(self.nonlinear[layer](x))
            x = gate * nonlinear + (1 - gate) * x
        return x


class CharAwareLM(nn.Module):
    def __init__(
        self,
        char_vocab_size,
        word_vocab_size,
        char_emb_dim=15,
        kernels=(1, 2, 3, 4, 5, 6),
        feature_maps=(25, 50, 75, 100, 125, 150),
        highway_layers=2,
        rnn_size=300,
        num_layers=2,
        dropout=0.5,
    ):
        super().__init__()
        self.char_embed = nn.Embedding(char_vocab_size, char_emb_dim, padding_idx=0)
        self.tdnn = TDNN(char_emb_dim, kernels, feature_maps)
        input_size = sum(feature_maps)
        self.batch_norm = nn.BatchNorm1d(input_size, affine=False)
        self.highway = HighwayNetwork(input_size, highway_layers)
        self.lstm = nn.LSTM(input_size, rnn_size, num_layers, batch_first=True, dropout=dropout)
        self.dropout = nn.Dropout(dropout)
        self.decoder = nn.Linear(rnn_size, word_vocab_size)

    def forward(self, x, hidden=None):
        # x: (batch, seq_len, max_word_len) character ids
        B, T, W = x.size()
        x = self.char_embed(x.view(-1, W))
        x = self.tdnn(x)
        x = self.batch_norm(x)
        x = self.highway(x)
        x = x.view(B, T, -1)
        x, hidden = self.lstm(x, hidden)
        x = self.dropout(x)
        return self.decoder(x), hidden


@heldout(
    "char_cnn_highway_lm",
    lambda: ((_ints(40, 2, 8, 7, seed=3),), {}),
    edit=("highway", {"num_layers": 1}),
)
def build_char_lm():
    return CharAwareLM(
        char_vocab_size=40,
        word_vocab_size=100,
        char_emb_dim=12,
        kernels=[1, 2, 3, 4],
        feature_maps=[8, 16, 24, 32],
        rnn_size=48,
    )
