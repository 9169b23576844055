"""Models that join two worlds: a LLaVA-style model whose vision tower is a transformers model built
from a small config and called with ``output_hidden_states=True`` (transformers sets up its
output capture on the first call), and a show-attend-tell captioner that sorts its batch by
caption length and decodes with an attention LSTM."""

from __future__ import annotations

import torch
import torch.nn as nn

from .case import args, case, randn, tokens

# --- LLaVA-style: a transformers vision tower, a projector, a small decoder written here ---------


class LlavaProjector(nn.Module):
    def __init__(self, vision_hidden_size, text_hidden_size, projector_hidden_act="gelu", depth=2):
        super().__init__()
        modules = [nn.Linear(vision_hidden_size, text_hidden_size)]
        for _ in range(1, depth):
            modules.append(getattr(nn, {"gelu": "GELU", "relu": "ReLU"}[projector_hidden_act])())
            modules.append(nn.Linear(text_hidden_size, text_hidden_size))
        self.mlp = nn.Sequential(*modules)

    def forward(self, image_features):
        return self.mlp(image_features)


class TinyDecoder(nn.Module):
    def __init__(self, vocab_size, hidden_size, n_layer, n_head):
        super().__init__()
        self.embed_tokens = nn.Embedding(vocab_size, hidden_size)
        layer = nn.TransformerEncoderLayer(
            hidden_size, n_head, 2 * hidden_size, dropout=0.0, batch_first=True, norm_first=True
        )
        self.layers = nn.TransformerEncoder(layer, n_layer, enable_nested_tensor=False)
        self.norm = nn.LayerNorm(hidden_size)
        self.lm_head = nn.Linear(hidden_size, vocab_size, bias=False)

    def forward(self, inputs_embeds):
        n = inputs_embeds.shape[1]
        causal = torch.triu(
            torch.full((n, n), float("-inf"), device=inputs_embeds.device), diagonal=1
        )
        return self.lm_head(self.norm(self.layers(inputs_embeds, mask=causal)))


class TinyLlava(nn.Module):
    def __init__(
        self,
        vision_config,
        vocab_size=100,
        text_hidden_size=32,
        n_layer=2,
        n_head=4,
        vision_feature_layer=-2,
        vision_feature_select_strategy="default",
    ):
        super().__init__()
        from transformers import CLIPVisionModel

        self.vision_tower = CLIPVisionModel(vision_config)
        self.multi_modal_projector = LlavaProjector(vision_config.hidden_size, text_hidden_size)
        self.language_model = TinyDecoder(vocab_size, text_hidden_size, n_layer, n_head)
        self.vision_feature_layer = vision_feature_layer
        self.vision_feature_select_strategy = vision_feature_select_strategy

    def get_image_features(self, pixel_values):
        image_outputs = self.vision_tower(pixel_values, output_hidden_states=True)
        selected = image_outputs.hidden_states[self.vision_feature_layer]
        if self.vision_feature_select_strategy == "default":
            selected = selected[:, 1:]
        return self.multi_modal_projector(selected)

    def forward(self, input_ids, pixel_values):
        image_features = self.get_image_features(pixel_values)
        text = self.language_model.embed_tokens(input_ids)
        return self.language_model(torch.cat([image_features, text], dim=1))


def _llava():
    from transformers import CLIPVisionConfig

    cfg = CLIPVisionConfig(
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=4,
        image_size=32,
        patch_size=8,
    )
    return TinyLlava(cfg)


case(
    "llava_clip_tower",
    _llava,
    args(lambda: tokens(2, 5, vocab=100), lambda: randn(2, 3, 32, 32)),
    edit=("multi_modal_projector.mlp.1", {"approximate": "tanh"}),
    styles="a transformers model inside, output_hidden_states=True on its first call, getattr(nn, name)",
)

# --- Show, attend and tell: sort by length, an attention LSTM decoder step by step --------------


class EncoderCNN(nn.Module):
    def __init__(self, encoded_image_size=4, width=16):
        super(EncoderCNN, self).__init__()
        self.enc_image_size = encoded_image_size
        self.cnn = nn.Sequential(
            nn.Conv2d(3, width, 3, 2, 1), nn.ReLU(), nn.Conv2d(width, width * 2, 3, 2, 1), nn.ReLU()
        )
        self.adaptive_pool = nn.AdaptiveAvgPool2d((encoded_image_size, encoded_image_size))

    def forward(self, images):
        return self.adaptive_pool(self.cnn(images)).permute(0, 2, 3, 1)


class SoftAttention(nn.Module):
    def __init__(self, encoder_dim, decoder_dim, attention_dim):
        super(SoftAttention, self).__init__()
        self.encoder_att = nn.Linear(encoder_dim, attention_dim)
        self.decoder_att = nn.Linear(decoder_dim, attention_dim)
        self.full_att = nn.Linear(attention_dim, 1)
        self.relu = nn.ReLU()
        self.softmax = nn.Softmax(dim=1)

    def forward(self, encoder_out, decoder_hidden):
        att = self.full_att(
            self.relu(self.encoder_att(encoder_out) + self.decoder_att(decoder_hidden).unsqueeze(1))
        ).squeeze(2)
        alpha = self.softmax(att)
        return (encoder_out * alpha.unsqueeze(2)).sum(dim=1), alpha


class DecoderWithAttention(nn.Module):
    def __init__(
        self, attention_dim, embed_dim, decoder_dim, vocab_size, encoder_dim=2048, dropout=0.5
    ):
        super(DecoderWithAttention, self).__init__()
        self.encoder_dim = encoder_dim
        self.vocab_size = vocab_size
        self.attention = SoftAttention(encoder_dim, decoder_dim, attention_dim)
        self.embedding = nn.Embedding(vocab_size, embed_dim)
        self.dropout = nn.Dropout(p=dropout)
        self.decode_step = nn.LSTMCell(embed_dim + encoder_dim, decoder_dim, bias=True)
        self.init_h = nn.Linear(encoder_dim, decoder_dim)
        self.init_c = nn.Linear(encoder_dim, decoder_dim)
        self.f_beta = nn.Linear(decoder_dim, encoder_dim)
        self.sigmoid = nn.Sigmoid()
        self.fc = nn.Linear(decoder_dim, vocab_size)

    def forward(self, encoder_out, encoded_captions, caption_lengths):
        batch_size = encoder_out.size(0)
        encoder_out = encoder_out.view(batch_size, -1, self.encoder_dim)
        num_pixels = encoder_out.size(1)
        caption_lengths, sort_ind = caption_lengths.squeeze(1).sort(dim=0, descending=True)
        encoder_out = encoder_out[sort_ind]
        encoded_captions = encoded_captions[sort_ind]
        embeddings = self.embedding(encoded_captions)
        mean = encoder_out.mean(dim=1)
        h, c = self.init_h(mean), self.init_c(mean)
        decode_lengths = (caption_lengths - 1).tolist()
        predictions = torch.zeros(
            batch_size, max(decode_lengths), self.vocab_size, device=encoder_out.device
        )
        alphas = torch.zeros(batch_size, max(decode_lengths), num_pixels, device=encoder_out.device)
        for t in range(max(decode_lengths)):
            batch_size_t = sum([l > t for l in decode_lengths])
            awe, alpha = self.attention(encoder_out[:batch_size_t], h[:batch_size_t])
            awe = self.sigmoid(self.f_beta(h[:batch_size_t])) * awe
            h, c = self.decode_step(
                torch.cat([embeddings[:batch_size_t, t, :], awe], dim=1),
                (h[:batch_size_t], c[:batch_size_t]),
            )
            predictions[:batch_size_t, t, :] = self.fc(self.dropout(h))
            alphas[:batch_size_t, t, :] = alpha
        return predictions, encoded_captions, decode_lengths, alphas, sort_ind


class Captioner(nn.Module):
    def __init__(
        self, vocab_size, width=16, attention_dim=16, embed_dim=8, decoder_dim=16, dropout=0.5
    ):
        super().__init__()
        self.encoder = EncoderCNN(4, width)
        self.decoder = DecoderWithAttention(
            attention_dim,
            embed_dim,
            decoder_dim,
            vocab_size,
            encoder_dim=width * 2,
            dropout=dropout,
        )

    def forward(self, images, captions, lengths):
        return self.decoder(self.encoder(images), captions, lengths)


case(
    "show_attend_tell",
    lambda: Captioner(30),
    args(
        lambda: randn(3, 3, 16, 16),
        lambda: tokens(3, 6, vocab=30),
        lambda: torch.tensor([[4], [6], [5]]),
    ),
    edit=("decoder.dropout", {"p": 0.2}),
    styles="sorting the batch by length, .tolist() sizes, an LSTMCell loop over a shrinking batch, a 5-tuple out",
)
