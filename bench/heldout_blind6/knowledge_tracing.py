"""Knowledge tracing: DKT (one-hot interactions into an RNN chosen by name), SAKT (self-attention
over past interactions), DKVMN (a static key memory and a dynamic value memory)."""

import torch
import torch.nn as nn
import torch.nn.functional as F

from .spec import heldout


def _ints(high, *shape, seed=0):
    return torch.randint(0, high, shape, generator=torch.Generator().manual_seed(seed))


def _kt_example(num_q, batch=3, seq_len=12, seed=0, with_query=False):
    q = _ints(num_q, batch, seq_len, seed=seed)
    r = _ints(2, batch, seq_len, seed=seed + 1)
    if with_query:
        # predict the answer to the next question from the interactions so far
        return (q[:, :-1], r[:, :-1], q[:, 1:]), {}
    return (q, r), {}


# --------------------------------------------------------------------------------------------
# DKT (Piech et al., 2015)
# --------------------------------------------------------------------------------------------


class DKT(nn.Module):
    def __init__(self, num_q, hidden_size, rnn_type="lstm", num_layers=1, dropout=0.2):
        super().__init__()
        self.num_q = num_q
        self.hidden_size = hidden_size
        rnn_cls = getattr(nn, rnn_type.upper())
        self.rnn = rnn_cls(2 * num_q, hidden_size, num_layers, batch_first=True)
        self.dropout = nn.Dropout(dropout)
        self.fc = nn.Linear(hidden_size, num_q)

    def forward(self, q, r):
        # interaction x_t = one_hot(q_t + num_q * r_t)
        x = F.one_hot(q + self.num_q * r, num_classes=2 * self.num_q).float()
        h, _ = self.rnn(x)
        y = torch.sigmoid(self.fc(self.dropout(h)))  # (batch, seq_len, num_q): P(correct) per skill
        return y


@heldout("dkt_onehot_gru", lambda: _kt_example(20))
def build_dkt():
    return DKT(num_q=20, hidden_size=32, rnn_type="gru")


# --------------------------------------------------------------------------------------------
# SAKT (Pandey & Karypis, 2019)
# --------------------------------------------------------------------------------------------


class FFN(nn.Module):
    def __init__(self, d, dropout):
        super().__init__()
        self.lr1 = nn.Linear(d, d)
        self.relu = nn.ReLU()
        self.lr2 = nn.Linear(d, d)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        return self.dropout(self.lr2(self.relu(self.lr1(x))))


class SAKT(nn.Module):
    def __init__(self, num_q, n, d, num_attn_heads, dropout):
        """
        num_q: number of questions; n: length of the interaction window; d: hidden size
        """
        super().__init__()
        self.num_q = num_q
        self.n = n
        self.d = d

        self.M = nn.Embedding(num_q * 2, d)  # interactions
        self.E = nn.Embedding(num_q, d)  # exercises
        self.P = nn.Parameter(torch.Tensor(n, d))  # positions

        nn.init.kaiming_normal_(self.P)

        self.attn = nn.MultiheadAttention(d, num_attn_heads, dropout=dropout)
        self.attn_dropout = nn.Dropout(dropout)
        self.attn_layer_norm = nn.LayerNorm(d)

        self.FFN = FFN(d, dropout)
        self.FFN_layer_norm = nn.LayerNorm(d)

        self.pred = nn.Linear(d, 1)

        self.register_buffer("causal_mask", torch.triu(torch.ones(n, n), diagonal=1).bool())

    def forward(self, q, r, qry):
        """q, r: (batch, n) past questions and responses; qry: (batch, n) the next questions"""
        x = q + self.num_q * r
        n = x.shape[1]

        M = self.M(x).permute(1, 0, 2)
        E = self.E(qry).permute(1, 0, 2)
        P = self.P[:n].unsqueeze(1)

        M = M + P

        S, attn_weights = self.attn(E, M, M, attn_mask=self.causal_mask[:n, :n])
        S = self.attn_dropout(S)
        S = S.permute(1, 0, 2)
        M = M.permute(1, 0, 2)
        E = E.permute(1, 0, 2)

        S = self.attn_layer_norm(S + M + E)

        F_ = self.FFN(S)
        F_ = self.FFN_layer_norm(F_ + S)

        p = torch.sigmoid(self.pred(F_)).squeeze(-1)

        return p, attn_weights


@heldout("sakt_self_attentive", lambda: _kt_example(25, seed=2, with_query=True))
def build_sakt():
    return SAKT(num_q=25, n=16, d=32, num_attn_heads=4, dropout=0.2)


# --------------------------------------------------------------------------------------------
# DKVMN (Zhang et al., 2017): correlation weights from the key memory, read from and
# erase-add write into the value memory, one step at a time
# --------------------------------------------------------------------------------------------


class MemoryHead(nn.Module):
    """Read and write heads over a (batch, memory_size, memory_state_dim) value memory."""

    def __init__(self, memory_size, memory_state_dim, is_write):
        super().__init__()
        self.memory_size = memory_size
        self.memory_state_dim = memory_state_dim
        self.is_write = is_write
        if self.is_write:
            self.erase = nn.Linear(memory_state_dim, memory_state_dim, bias=True)
            self.add = nn.Linear(memory_state_dim, memory_state_dim, bias=True)
            nn.init.kaiming_normal_(self.erase.weight)
            nn.init.kaiming_normal_(self.add.weight)
            nn.init.constant_(self.erase.bias, 0)
            nn.init.constant_(self.add.bias, 0)

    @staticmethod
    def addressing(control_input, memory):
        """control_input: (batch, key_dim), memory: (memory_size, key_dim) -> (batch, memory_size)"""
        similarity_score = torch.matmul(control_input, torch.t(memory))
        correlation_weight = F.softmax(similarity_score, dim=1)
        return correlation_weight

    def read(self, memory, read_weight):
        read_weight = read_weight.view(-1, 1, self.memory_size)
        read_content = torch.matmul(read_weight, memory).view(-1, self.memory_state_dim)
        return read_content

    def write(self, control_input, memory, write_weight):
        assert self.is_write
        erase_signal = torch.sigmoid(self.erase(control_input))
        add_signal = torch.tanh(self.add(control_input))
        erase_mul = torch.bmm(write_weight.unsqueeze(2), erase_signal.unsqueeze(1))
        add_mul = torch.bmm(write_weight.unsqueeze(2), add_signal.unsqueeze(1))
        new_memory = memory * (1 - erase_mul) + add_mul
        return new_memory


class DKVMN(nn.Module):
    def __init__(
        self,
        n_question,
        batch_size=None,
        q_embed_dim=32,
        qa_embed_dim=32,
        memory_size=10,
        final_fc_dim=32,
    ):
        super().__init__()
        self.n_question = n_question
        self.memory_size = memory_size

        self.key_head = MemoryHead(memory_size, q_embed_dim, is_write=False)
        self.value_head = MemoryHead(memory_size, qa_embed_dim, is_write=True)

        self.memory_key = nn.Parameter(torch.randn(memory_size, q_embed_dim))
        nn.init.kaiming_normal_(self.memory_key)
        self.init_memory_value = nn.Parameter(torch.randn(memory_size, qa_embed_dim))
        nn.init.kaiming_normal_(self.init_memory_value)

        self.q_embed = nn.Embedding(self.n_question + 1, q_embed_dim, padding_idx=0)
        self.qa_embed = nn.Embedding(2 * self.n_question + 1, qa_embed_dim, padding_idx=0)

        self.read_embed_linear = nn.Linear(qa_embed_dim + q_embed_dim, final_fc_dim, bias=True)
        self.predict_linear = nn.Linear(final_fc_dim, 1, bias=True)

    def forward(self, q, r):
        # ids are shifted by one so that 0 can pad
        q_data = q + 1
        qa_data = q + 1 + self.n_question * r
        batch_size, seqlen = q_data.shape

        q_embed_data = self.q_embed(q_data)
        qa_embed_data = self.qa_embed(qa_data)

        memory_value = self.init_memory_value.unsqueeze(0).repeat(batch_size, 1, 1)

        slice_q_embed_data = torch.chunk(q_embed_data, seqlen, 1)
        slice_qa_embed_data = torch.chunk(qa_embed_data, seqlen, 1)

        value_read_content_l = []
        input_embed_l = []
        for i in range(seqlen):
            # Attention
            q = slice_q_embed_data[i].squeeze(1)
            correlation_weight = self.key_head.addressing(q, self.memory_key)

            # Read Process
            read_content = self.value_head.read(memory_value, correlation_weight)
            value_read_content_l.append(read_content)
            input_embed_l.append(q)

            # Write Process
            qa = slice_qa_embed_data[i].squeeze(1)
            memory_value = self.value_head.write(qa, memory_value, correlation_weight)

        all_read_value_content = torch.stack(value_read_content_l, 1)
        input_embed_content = torch.stack(input_embed_l, 1)

        predict_input = torch.cat([all_read_value_content, input_embed_content], 2)
        read_content_embed = torch.tanh(self.read_embed_linear(predict_input))

        pred = self.predict_linear(read_content_embed)
        return torch.sigmoid(pred).squeeze(-1)


@heldout("dkvmn_memory", lambda: _kt_example(15, seed=4))
def build_dkvmn():
    return DKVMN(n_question=15, q_embed_dim=16, qa_embed_dim=24, memory_size=8, final_fc_dim=16)
