"""Memory-augmented networks: a Neural Turing Machine, a DNC and end-to-end memory networks."""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from .spec import heldout, rand

# ----------------------------------------------------------------------------------------------
# Neural Turing Machine (Graves et al. 2014), written like the usual pytorch-ntm ports
# ----------------------------------------------------------------------------------------------


class NTMMemory(nn.Module):
    """N x M memory with a learned-free bias initialisation, reset per batch."""

    def __init__(self, N, M):
        super().__init__()
        self.N = N
        self.M = M
        stdev = 1 / (N + M) ** 0.5
        self.register_buffer("mem_bias", torch.empty(N, M).uniform_(-stdev, stdev))

    def reset(self, batch_size):
        self.memory = self.mem_bias.clone().repeat(batch_size, 1, 1)

    def size(self):
        return self.N, self.M

    def read(self, w):
        return torch.matmul(w.unsqueeze(1), self.memory).squeeze(1)

    def write(self, w, e, a):
        self.prev_mem = self.memory
        erase = torch.matmul(w.unsqueeze(-1), e.unsqueeze(1))
        add = torch.matmul(w.unsqueeze(-1), a.unsqueeze(1))
        self.memory = self.prev_mem * (1 - erase) + add

    def address(self, k, beta, g, s, gamma, w_prev):
        wc = F.softmax(
            beta * F.cosine_similarity(self.memory + 1e-16, k.unsqueeze(1) + 1e-16, dim=-1), dim=1
        )
        wg = g * wc + (1 - g) * w_prev
        w_hat = self._shift(wg, s)
        w = w_hat**gamma
        return w / (w.sum(dim=1, keepdim=True) + 1e-16)

    def _shift(self, wg, s):
        # circular convolution with a 3-tap shift kernel
        n = s.size(1) // 2
        padded = torch.cat([wg[:, -n:], wg, wg[:, :n]], dim=1)
        return F.conv1d(padded.unsqueeze(0), s.flip(1).unsqueeze(1), groups=wg.size(0)).squeeze(0)


class NTMHeadBase(nn.Module):
    def __init__(self, memory, controller_size, shift_range=3):
        super().__init__()
        self.memory = memory
        self.N, self.M = memory.size()
        self.controller_size = controller_size
        self.shift_range = shift_range

    def create_new_state(self, batch_size):
        raise NotImplementedError

    def is_read_head(self):
        return NotImplementedError

    def _address_memory(self, k, beta, g, s, gamma, w_prev):
        k = k.clone()
        beta = F.softplus(beta)
        g = torch.sigmoid(g)
        s = F.softmax(s, dim=1)
        gamma = 1 + F.softplus(gamma)
        return self.memory.address(k, beta, g, s, gamma, w_prev)

    @staticmethod
    def _split_cols(mat, lengths):
        assert mat.size(1) == sum(lengths), "Lengths must be summed to num columns"
        results = []
        s = 0
        for e in lengths:
            results.append(mat[:, s : s + e])
            s += e
        return results


class NTMReadHead(NTMHeadBase):
    def __init__(self, memory, controller_size, shift_range=3):
        super().__init__(memory, controller_size, shift_range)
        # Corresponding to k, beta, g, s, gamma sizes from the paper
        self.read_lengths = [self.M, 1, 1, shift_range, 1]
        self.fc_read = nn.Linear(controller_size, sum(self.read_lengths))
        nn.init.xavier_uniform_(self.fc_read.weight, gain=1.4)
        nn.init.normal_(self.fc_read.bias, std=0.01)

    def create_new_state(self, batch_size):
        return torch.zeros(batch_size, self.N, device=self.memory.mem_bias.device)

    def is_read_head(self):
        return True

    def forward(self, embeddings, w_prev):
        o = self.fc_read(embeddings)
        k, beta, g, s, gamma = self._split_cols(o, self.read_lengths)
        w = self._address_memory(k, beta, g, s, gamma, w_prev)
        r = self.memory.read(w)
        return r, w


class NTMWriteHead(NTMHeadBase):
    def __init__(self, memory, controller_size, shift_range=3):
        super().__init__(memory, controller_size, shift_range)
        # k, beta, g, s, gamma, e, a
        self.write_lengths = [self.M, 1, 1, shift_range, 1, self.M, self.M]
        self.fc_write = nn.Linear(controller_size, sum(self.write_lengths))
        nn.init.xavier_uniform_(self.fc_write.weight, gain=1.4)
        nn.init.normal_(self.fc_write.bias, std=0.01)

    def create_new_state(self, batch_size):
        return torch.zeros(batch_size, self.N, device=self.memory.mem_bias.device)

    def is_read_head(self):
        return False

    def forward(self, embeddings, w_prev):
        o = self.fc_write(embeddings)
        k, beta, g, s, gamma, e, a = self._split_cols(o, self.write_lengths)
        e = torch.sigmoid(e)
        w = self._address_memory(k, beta, g, s, gamma, w_prev)
        self.memory.write(w, e, a)
        return w


class LSTMController(nn.Module):
    def __init__(self, num_inputs, num_outputs, num_layers):
        super().__init__()
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.num_layers = num_layers
        self.lstm = nn.LSTM(input_size=num_inputs, hidden_size=num_outputs, num_layers=num_layers)
        self.lstm_h_bias = nn.Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)
        self.lstm_c_bias = nn.Parameter(torch.randn(self.num_layers, 1, self.num_outputs) * 0.05)
        self.reset_parameters()

    def create_new_state(self, batch_size):
        lstm_h = self.lstm_h_bias.clone().repeat(1, batch_size, 1)
        lstm_c = self.lstm_c_bias.clone().repeat(1, batch_size, 1)
        return lstm_h, lstm_c

    def reset_parameters(self):
        for p in self.lstm.parameters():
            if p.dim() == 1:
                nn.init.constant_(p, 0)
            else:
                stdev = 5 / (self.num_inputs + self.num_outputs) ** 0.5
                nn.init.uniform_(p, -stdev, stdev)

    def size(self):
        return self.num_inputs, self.num_outputs

    def forward(self, x, prev_state):
        x = x.unsqueeze(0)
        outp, state = self.lstm(x, prev_state)
        return outp.squeeze(0), state


class NTM(nn.Module):
    def __init__(
        self, num_inputs, num_outputs, controller_size, controller_layers, num_heads, N, M
    ):
        super().__init__()
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.memory = NTMMemory(N, M)
        self.controller = LSTMController(
            num_inputs + M * num_heads, controller_size, controller_layers
        )
        heads = []
        for _ in range(num_heads):
            heads += [
                NTMReadHead(self.memory, controller_size),
                NTMWriteHead(self.memory, controller_size),
            ]
        self.heads = nn.ModuleList(heads)
        self.num_read_heads = num_heads
        self.init_r = []
        for i in range(num_heads):
            init_r_bias = torch.randn(1, M) * 0.01
            self.register_buffer(f"read{i}_bias", init_r_bias.data)
            self.init_r += [init_r_bias]
        self.fc = nn.Linear(controller_size + self.num_read_heads * M, num_outputs)
        nn.init.xavier_uniform_(self.fc.weight, gain=1)
        nn.init.normal_(self.fc.bias, std=0.01)

    def create_new_state(self, batch_size):
        self.memory.reset(batch_size)
        init_r = [
            getattr(self, f"read{i}_bias").clone().repeat(batch_size, 1)
            for i in range(self.num_read_heads)
        ]
        controller_state = self.controller.create_new_state(batch_size)
        heads_state = [head.create_new_state(batch_size) for head in self.heads]
        return init_r, controller_state, heads_state

    def step(self, x, prev_state):
        prev_reads, prev_controller_state, prev_heads_states = prev_state
        inp = torch.cat([x] + prev_reads, dim=1)
        controller_outp, controller_state = self.controller(inp, prev_controller_state)
        reads = []
        heads_states = []
        for head, prev_head_state in zip(self.heads, prev_heads_states):
            if head.is_read_head():
                r, head_state = head(controller_outp, prev_head_state)
                reads += [r]
            else:
                head_state = head(controller_outp, prev_head_state)
            heads_states += [head_state]
        inp2 = torch.cat([controller_outp] + reads, dim=1)
        o = torch.sigmoid(self.fc(inp2))
        return o, (reads, controller_state, heads_states)

    def forward(self, x):
        # x: (seq, batch, inputs)
        state = self.create_new_state(x.size(1))
        outs = []
        for t in range(x.size(0)):
            o, state = self.step(x[t], state)
            outs.append(o)
        return torch.stack(outs)


@heldout(
    "ntm_copy", lambda: ((torch.rand(6, 2, 9, generator=torch.Generator().manual_seed(0)),), {})
)
def build_ntm():
    return NTM(
        num_inputs=9,
        num_outputs=8,
        controller_size=32,
        controller_layers=1,
        num_heads=1,
        N=16,
        M=12,
    )


# ----------------------------------------------------------------------------------------------
# Differentiable Neural Computer (Graves et al. 2016), a compact single-file version
# ----------------------------------------------------------------------------------------------


@dataclass
class DNCConfig:
    input_size: int = 10
    output_size: int = 10
    hidden_size: int = 32
    memory_slots: int = 12
    word_size: int = 8
    read_heads: int = 2
    clip: float = 20.0


class DNCMemory(nn.Module):
    """Usage-based allocation and the temporal link matrix; holds no weights of its own."""

    def __init__(self, cfg: DNCConfig):
        super().__init__()
        self.N = cfg.memory_slots
        self.W = cfg.word_size
        self.R = cfg.read_heads
        self.register_buffer("eye", torch.eye(self.N), persistent=False)

    def init_state(self, B, device):
        N, W, R = self.N, self.W, self.R
        return dict(
            memory=torch.zeros(B, N, W, device=device) + 1e-6,
            link=torch.zeros(B, N, N, device=device),
            precedence=torch.zeros(B, N, device=device),
            read_w=torch.zeros(B, R, N, device=device),
            write_w=torch.zeros(B, N, device=device),
            usage=torch.zeros(B, N, device=device),
        )

    @staticmethod
    def content(memory, keys, strengths):
        sim = F.cosine_similarity(memory.unsqueeze(1), keys.unsqueeze(2), dim=-1, eps=1e-6)
        return F.softmax(sim * strengths.unsqueeze(-1), dim=-1)

    def allocation(self, usage):
        usage = 1e-6 + (1 - 1e-6) * usage
        sorted_usage, phi = torch.sort(usage, dim=-1)
        prod = torch.cumprod(
            torch.cat([torch.ones_like(sorted_usage[:, :1]), sorted_usage[:, :-1]], 1), 1
        )
        sorted_alloc = (1 - sorted_usage) * prod
        return sorted_alloc.gather(1, phi.argsort(1))

    def forward(self, iface, state):
        mem, link, prec = state["memory"], state["link"], state["precedence"]
        # usage update from previous writes and free gates
        psi = torch.prod(1 - iface["free"].unsqueeze(-1) * state["read_w"], dim=1)
        usage = (state["usage"] + state["write_w"] - state["usage"] * state["write_w"]) * psi
        alloc = self.allocation(usage)
        cw = self.content(mem, iface["write_key"], iface["write_beta"]).squeeze(1)
        ww = iface["write_gate"] * (iface["alloc_gate"] * alloc + (1 - iface["alloc_gate"]) * cw)
        mem = mem * (1 - ww.unsqueeze(-1) * iface["erase"].unsqueeze(1)) + ww.unsqueeze(-1) * iface[
            "write_vec"
        ].unsqueeze(1)
        link = (1 - ww.unsqueeze(2) - ww.unsqueeze(1)) * link + ww.unsqueeze(2) * prec.unsqueeze(1)
        link = link * (1 - self.eye)
        prec = (1 - ww.sum(-1, keepdim=True)) * prec + ww
        fwd = torch.bmm(state["read_w"], link.transpose(1, 2))
        bwd = torch.bmm(state["read_w"], link)
        cr = self.content(mem, iface["read_keys"], iface["read_betas"])
        modes = iface["read_modes"]
        rw = modes[..., 0:1] * bwd + modes[..., 1:2] * cr + modes[..., 2:3] * fwd
        reads = torch.bmm(rw, mem)
        return reads, dict(
            memory=mem, link=link, precedence=prec, read_w=rw, write_w=ww, usage=usage
        )


class DNC(nn.Module):
    def __init__(self, cfg: DNCConfig):
        super().__init__()
        self.cfg = cfg
        W, R = cfg.word_size, cfg.read_heads
        self.controller = nn.LSTMCell(cfg.input_size + R * W, cfg.hidden_size)
        self.interface_size = R * W + 3 * W + 5 * R + 3
        self.interface = nn.Linear(cfg.hidden_size, self.interface_size)
        self.memory = DNCMemory(cfg)
        self.output = nn.Linear(cfg.hidden_size + R * W, cfg.output_size)

    def parse(self, v):
        W, R = self.cfg.word_size, self.cfg.read_heads
        sizes = [R * W, R, W, 1, W, W, R, 1, 1, R * 3]
        rk, rb, wk, wb, e, wv, fg, ag, wg, rm = torch.split(v, sizes, dim=-1)
        B = v.size(0)
        return dict(
            read_keys=torch.tanh(rk.view(B, R, W)),
            read_betas=F.softplus(rb) + 1,
            write_key=torch.tanh(wk.view(B, 1, W)),
            write_beta=F.softplus(wb) + 1,
            erase=torch.sigmoid(e),
            write_vec=torch.tanh(wv),
            free=torch.sigmoid(fg),
            alloc_gate=torch.sigmoid(ag),
            write_gate=torch.sigmoid(wg),
            read_modes=F.softmax(rm.view(B, R, 3), dim=-1),
        )

    def forward(self, x):
        B, T, _ = x.shape
        cfg = self.cfg
        h = x.new_zeros(B, cfg.hidden_size)
        c = x.new_zeros(B, cfg.hidden_size)
        reads = x.new_zeros(B, cfg.read_heads * cfg.word_size)
        state = self.memory.init_state(B, x.device)
        outs = []
        for t in range(T):
            h, c = self.controller(torch.cat([x[:, t], reads], -1), (h, c))
            h_c = torch.clamp(h, -cfg.clip, cfg.clip)
            r, state = self.memory(self.parse(self.interface(h_c)), state)
            reads = r.flatten(1)
            outs.append(self.output(torch.cat([h_c, reads], -1)))
        return torch.stack(outs, 1)


@heldout("dnc", lambda: ((rand(2, 5, 10),), {}), edit=("output", {"out_features": 6}))
def build_dnc():
    return DNC(DNCConfig())


# ----------------------------------------------------------------------------------------------
# End-to-end memory network (Sukhbaatar et al. 2015), adjacent weight tying, position encoding
# ----------------------------------------------------------------------------------------------


def position_encoding(sentence_size, embedding_dim):
    encoding = torch.ones(embedding_dim, sentence_size)
    ls = sentence_size + 1
    le = embedding_dim + 1
    for i in range(1, le):
        for j in range(1, ls):
            encoding[i - 1, j - 1] = (i - (embedding_dim + 1) / 2) * (j - (sentence_size + 1) / 2)
    encoding = 1 + 4 * encoding / embedding_dim / sentence_size
    encoding[:, -1] = 1.0
    return encoding.t()


class MemN2N(nn.Module):
    def __init__(self, settings):
        super().__init__()
        use_cuda = settings["use_cuda"]
        num_vocab = settings["num_vocab"]
        embedding_dim = settings["embedding_dim"]
        sentence_size = settings["sentence_size"]
        self.max_hops = settings["max_hops"]
        self.memory_size = settings.get("memory_size", 10)

        for hop in range(self.max_hops + 1):
            C = nn.Embedding(num_vocab, embedding_dim, padding_idx=0)
            C.weight.data.normal_(0, 0.1)
            self.add_module(f"C_{hop}", C)
        self.C = AttrProxy(self, "C_")
        self.TA = nn.Parameter(torch.randn(self.memory_size, embedding_dim) * 0.1)
        self.TC = nn.Parameter(torch.randn(self.memory_size, embedding_dim) * 0.1)
        self.softmax = nn.Softmax(dim=1)
        self.register_buffer("encoding", position_encoding(sentence_size, embedding_dim))
        self.use_cuda = use_cuda

    def forward(self, story, query):
        story_size = story.size()
        u = []
        query_embed = self.C[0](query)
        encoding = self.encoding.unsqueeze(0).expand_as(query_embed)
        u.append(torch.sum(query_embed * encoding, 1))
        for hop in range(self.max_hops):
            embed_A = self.C[hop](story.view(story.size(0), -1))
            embed_A = embed_A.view(story_size + (embed_A.size(-1),))
            encoding = self.encoding.unsqueeze(0).unsqueeze(1).expand_as(embed_A)
            m_A = torch.sum(embed_A * encoding, 2) + self.TA[: story_size[1]]
            u_temp = u[-1].unsqueeze(1).expand_as(m_A)
            prob = self.softmax(torch.sum(m_A * u_temp, 2))
            embed_C = self.C[hop + 1](story.view(story.size(0), -1))
            embed_C = embed_C.view(story_size + (embed_C.size(-1),))
            m_C = torch.sum(embed_C * encoding, 2) + self.TC[: story_size[1]]
            prob = prob.unsqueeze(2).expand_as(m_C)
            o_k = torch.sum(m_C * prob, 1)
            u_k = u[-1] + o_k
            u.append(u_k)
        a_hat = u[-1] @ self.C[self.max_hops].weight.transpose(0, 1)
        return a_hat


class AttrProxy:
    """Index into modules named prefix0, prefix1, ... (a pre-ModuleList idiom)."""

    def __init__(self, module, prefix):
        self.module = module
        self.prefix = prefix

    def __getitem__(self, i):
        return getattr(self.module, self.prefix + str(i))


def _babi():
    g = torch.Generator().manual_seed(0)
    return (
        torch.randint(1, 40, (2, 6, 7), generator=g),
        torch.randint(1, 40, (2, 7), generator=g),
    ), {}


@heldout("memn2n_babi", _babi, edit=("C_3", {"padding_idx": None}))
def build_memn2n():
    settings = dict(
        use_cuda=False, num_vocab=40, embedding_dim=20, sentence_size=7, max_hops=3, memory_size=10
    )
    return MemN2N(settings)
