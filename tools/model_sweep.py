#!/usr/bin/env python3
"""aotgrad: the real-model sweep (issue 20) -- torchvision, torchaudio and nn.TransformerEncoder
models trained one step through tools/export.py + `aotgrad run --train`, against eager autograd.

Every model of MODELS (torchvision's classification families, torchaudio's models,
torch.nn.TransformerEncoder; the venv's torchvision and torchaudio, beside its PyTorch 2.11) is built with a
fixed seed at a small size (batch 2, small images and waveforms, dropout and stochastic depth 0 so
that the step is deterministic), wrapped with its loss (cross-entropy of the logits, or MSE of the
output against a fixed random target) and put in training mode. In a worker process:

  - eager: one forward and backward of a copy of the model (torch.manual_seed(0) first); the loss,
    every parameter's grad and every buffer after the step (BatchNorm's running statistics and
    num_batches_tracked) are the expected results;
  - export: tools/export.py's export() traces the forward with make_fx and writes <model>.fx and
    <model>.inputs.safetensors (make_fx's tensor constants, `_tensor_constant<k>`, included).

Then `aotgrad run <model>.fx --train --grad=<parameters> --seed=0` computes the same step, and
`aotgrad compile --grad=... --stats=json` gives the compile time (total wall and CPU time of the
pipeline) and how many nodes took the op world's paths; the reference AOTAutograd (PyTorch 2.11's
own, bench/compile_compare.py's; min-cut partition, no-op compilers) compiles the
same model in another worker, timed as
bench/compile_compare.py times it, the anchor for compile time and saved activation bytes. The loss, every grad and every buffer
(one aotgrad does not write back is its value before the step) are compared with eager's by
tools/opinfo_sweep.py's fp32 rule (rtol 1e-4, atol 1e-5 x the tensor's scale); the report gives
each model's worst tensor as the ratio of its largest error to the tolerance.

A failing model is classified by cause as the OpInfo sweep does (tools/opinfo_sweep.py's
classify_error): export failed (make_fx or text form), eager error, unknown op <name>, no
derivative <name>, meta mismatch / error, parse error, functionalization error, decomposition
error, run error, wrong loss, wrong grad, wrong buffer, timeout, crash (signal). Workers and aotgrad
run one at a time, each killed after its timeout.

usage:
  model_sweep.py run --aotgrad=BIN --out=DIR [--models=a,b|--models-file=FILE] [--timeout=S]
                     [--expected=FILE] [--no-functorch]
      writes DIR/report.json and DIR/report.md (the exported graphs stay in DIR/models); with
      --expected, exits 1 when a model listed as passing fails and prints IMPROVED for a model
      listed as failing that passes.
  model_sweep.py list                                    the models, with their descriptions
  model_sweep.py check REPORT.json EXPECTED              the --expected check of a finished run
  model_sweep.py expected REPORT.json                    an expected-results file from a report
  model_sweep.py benchmarks REPORT.json BENCHMARKS.md [--command=TEXT]
      writes the report's markdown into BENCHMARKS.md between its model_sweep markers
"""

import argparse
import copy
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import benchmarks_md  # noqa: E402

import torch  # noqa: E402
import torch.nn as nn  # noqa: E402
import torch.nn.functional as F  # noqa: E402

import export  # noqa: E402  tools/export.py
from opinfo_sweep import (ATOL, RTOL, _fd_agrees, _first_line, _last_line, _machine,  # noqa: E402
                          classify_error, compare, seed_of)

SEED = 0
BATCH = 2

# --- the models -----------------------------------------------------------------------------------


class WithLoss(nn.Module):
    """`net` with its loss: forward(**inputs) -> scalar. `kind` is 'ce' (cross-entropy of the
    logits against `target`), 'mse' (MSE of the output against `target`) or 'ce_time' (a
    (batch, classes, time) output, cross-entropy per frame)."""

    def __init__(self, net, kind, output=None, eval_parts=()):
        super().__init__()
        self.net = net
        self.kind = kind
        self.output = output  # picks the tensor of a tuple output
        self.eval_parts = list(eval_parts)  # submodules kept in eval mode when training
        for m in net.modules():  # a deterministic step: no dropout, no stochastic depth
            if isinstance(m, nn.modules.dropout._DropoutNd) or type(m).__name__ == "StochasticDepth":
                m.p = 0.0

    def train(self, mode=True):
        super().train(mode)
        for m in self.eval_parts:
            m.eval()
        return self

    def forward(self, x, target, **extra):
        out = self.net(x, **extra)
        if self.output is not None:
            out = self.output(out)
        if self.kind == "mse":
            return F.mse_loss(out, target)
        return F.cross_entropy(out, target)


def _tv():
    return export._torchvision()


def _audio():
    try:
        import torchaudio
    except ImportError as e:
        raise RuntimeError("this model needs torchaudio (scripts/setup.sh installs it into the venv): %s"
                           % e) from None
    return torchaudio


def _image(net, size=32, classes=10):
    return WithLoss(net, "ce"), {"x": torch.randn(BATCH, 3, size, size),
                                 "target": torch.randint(0, classes, (BATCH,))}


def _vision(name, size=32, **kwargs):
    def build():
        return _image(getattr(_tv().models, name)(num_classes=10, **kwargs), size)
    return build


def _small_vit():
    from torchvision.models.vision_transformer import VisionTransformer
    return _image(VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=2,
                                    hidden_dim=32, mlp_dim=64, num_classes=10))


def _small_swin():
    from torchvision.models.swin_transformer import SwinTransformer
    return _image(SwinTransformer(patch_size=[4, 4], embed_dim=16, depths=[2, 2], num_heads=[2, 4],
                                  window_size=[4, 4], stochastic_depth_prob=0.0, num_classes=10))


def _transformer_encoder(norm_first=False, mask=False):
    def build():
        layer = nn.TransformerEncoderLayer(d_model=32, nhead=4, dim_feedforward=64, dropout=0.0,
                                           batch_first=True, norm_first=norm_first)
        net = nn.TransformerEncoder(layer, num_layers=2, enable_nested_tensor=False)
        inputs = {"x": torch.randn(BATCH, 8, 32), "target": torch.randn(BATCH, 8, 32)}
        if mask:
            inputs["mask"] = torch.triu(torch.full((8, 8), float("-inf")), diagonal=1)
        return WithLoss(net, "mse"), inputs
    return build


def _wav2letter():
    net = _audio().models.Wav2Letter(num_classes=12, input_type="waveform", num_features=1)
    # (batch, 1, samples) -> (batch, classes, frames); a class per frame
    x = torch.randn(BATCH, 1, 1600)
    with torch.no_grad():
        frames = net(x).shape[-1]
    return WithLoss(net, "ce"), {"x": x, "target": torch.randint(0, 12, (BATCH, frames))}


def _conv_tasnet():
    net = _audio().models.ConvTasNet(num_sources=2, enc_kernel_size=8, enc_num_feats=16,
                                     msk_kernel_size=3, msk_num_feats=8, msk_num_hidden_feats=16,
                                     msk_num_layers=2, msk_num_stacks=1)
    return WithLoss(net, "mse"), {"x": torch.randn(BATCH, 1, 400), "target": torch.randn(BATCH, 2, 400)}


def _wav2vec2(group_norm):
    """A small wav2vec2 (layer-norm feature extractor) or HuBERT-style (group norm, post-norm
    encoder, as hubert_base) configuration of torchaudio's Wav2Vec2Model."""
    def build():
        m = _audio().models.wav2vec2_model(
            extractor_mode="group_norm" if group_norm else "layer_norm",
            extractor_conv_layer_config=[(16, 10, 5), (16, 3, 2), (16, 2, 2)],
            extractor_conv_bias=not group_norm, encoder_embed_dim=32, encoder_projection_dropout=0.0,
            encoder_pos_conv_kernel=16, encoder_pos_conv_groups=4, encoder_num_layers=2,
            encoder_num_heads=2, encoder_attention_dropout=0.0, encoder_ff_interm_features=64,
            encoder_ff_interm_dropout=0.0, encoder_dropout=0.0,
            encoder_layer_norm_first=not group_norm, encoder_layer_drop=0.0, aux_num_out=12)
        x = torch.randn(BATCH, 800)
        with torch.no_grad():
            frames = m(x)[0].shape[1]
        # Layer drop is a Python branch on torch.rand(1).item() in training mode, which make_fx
        # cannot trace: the encoder's Transformer runs in eval mode (its dropouts are 0 anyway).
        return (WithLoss(m, "ce", output=lambda out: out[0].transpose(1, 2),
                         eval_parts=[m.encoder.transformer]),
                {"x": x, "target": torch.randint(0, 12, (BATCH, frames))})
    return build


def _deepspeech():
    net = _audio().models.DeepSpeech(n_feature=16, n_hidden=32, n_class=12, dropout=0.0)
    # (batch, channel, time, feature) -> (batch, time, classes)
    return (WithLoss(net, "ce", output=lambda out: out.transpose(1, 2)),
            {"x": torch.randn(BATCH, 1, 10, 16), "target": torch.randint(0, 12, (BATCH, 10))})


def _conformer_net():
    return _audio().models.Conformer(input_dim=32, num_heads=2, ffn_dim=64, num_layers=2,
                                     depthwise_conv_kernel_size=7, dropout=0.0)


def _conformer_lengths():
    """Conformer.forward(input, lengths) as it is: the padding mask's size is lengths.max().item(),
    data-dependent for make_fx."""
    return (WithLoss(_conformer_net(), "mse", output=lambda out: out[0]),
            {"x": torch.randn(BATCH, 10, 32), "target": torch.randn(BATCH, 10, 32),
             "lengths": torch.tensor([10, 7])})


class _ConformerFixedLengths(nn.Module):
    """Conformer's forward with the lengths fixed: the padding mask is made once, by torchaudio's
    own _lengths_to_padding_mask, and is a plain tensor attribute, which make_fx traces as a tensor
    constant (lifted into the graph's inputs as `_tensor_constant0`)."""

    def __init__(self, conformer, lengths):
        super().__init__()
        from torchaudio.models.conformer import _lengths_to_padding_mask
        self.conformer = conformer
        self.mask = _lengths_to_padding_mask(lengths)

    def forward(self, x):
        x = x.transpose(0, 1)
        for layer in self.conformer.conformer_layers:
            x = layer(x, self.mask)
        return x.transpose(0, 1)


def _conformer():
    return (WithLoss(_ConformerFixedLengths(_conformer_net(), torch.tensor([10, 7])), "mse"),
            {"x": torch.randn(BATCH, 10, 32), "target": torch.randn(BATCH, 10, 32)})


def _wavernn():
    net = _audio().models.WaveRNN(upsample_scales=[2, 2], n_classes=16, hop_length=4, n_res_block=2,
                                  n_rnn=16, n_fc=16, kernel_size=5, n_freq=8, n_hidden=8, n_output=8)
    # waveform (batch, 1, (frames - kernel + 1) * hop), specgram (batch, 1, freq, frames)
    # -> (batch, 1, samples, classes); a class per sample
    return (WithLoss(net, "ce", output=lambda out: out.squeeze(1).transpose(1, 2)),
            {"x": torch.randn(BATCH, 1, 24), "target": torch.randint(0, 16, (BATCH, 24)),
             "specgram": torch.randn(BATCH, 1, 8, 10)})


def _hdemucs():
    net = _audio().models.HDemucs(sources=["a", "b"], audio_channels=1, channels=8, depth=2,
                                  nfft=64, dconv_depth=1)
    return WithLoss(net, "mse"), {"x": torch.randn(BATCH, 1, 256), "target": torch.randn(BATCH, 2, 1, 256)}


def _emformer():
    net = _audio().models.Emformer(input_dim=32, num_heads=2, ffn_dim=64, num_layers=2,
                                   segment_length=4, right_context_length=1)
    return (WithLoss(net, "mse", output=lambda out: out[0]),
            {"x": torch.randn(BATCH, 9, 32), "target": torch.randn(BATCH, 8, 32),
             "lengths": torch.tensor([9, 9])})


def _tacotron2():
    net = _audio().models.Tacotron2(n_mels=8, n_symbol=20, symbol_embedding_dim=16,
                                    encoder_embedding_dim=16, encoder_n_convolution=1,
                                    decoder_rnn_dim=16, attention_rnn_dim=16, attention_hidden_dim=8,
                                    attention_location_n_filter=4, attention_location_kernel_size=3,
                                    prenet_dim=8, postnet_n_convolution=1, postnet_embedding_dim=8,
                                    decoder_dropout=0.0, attention_dropout=0.0)
    return (WithLoss(net, "mse", output=lambda out: out[1]),
            {"x": torch.randint(0, 20, (BATCH, 6)), "target": torch.randn(BATCH, 8, 5),
             "token_lengths": torch.tensor([6, 6]), "mel_specgram": torch.randn(BATCH, 8, 5),
             "mel_specgram_lengths": torch.tensor([5, 5])})


def _small_maxvit():
    from torchvision.models.maxvit import MaxVit
    return _image(MaxVit(input_size=(32, 32), stem_channels=16, partition_size=2,
                         block_channels=[16, 32], block_layers=[1, 1], head_dim=8,
                         stochastic_depth_prob=0.0, num_classes=10))


def _video(name):
    def build():
        net = getattr(_tv().models.video, name)(num_classes=10)
        return WithLoss(net, "ce"), {"x": torch.randn(BATCH, 3, 4, 32, 32),
                                     "target": torch.randint(0, 10, (BATCH,))}
    return build


# name -> (family, source, description, builder returning (model with loss, inputs))
MODELS = {}


def _add(name, family, source, description, build):
    MODELS[name] = (family, source, description, build)


for _name, _fam, _kw in [
        ("resnet18", "ResNet", {}), ("resnet50", "ResNet", {}),
        ("resnext50_32x4d", "ResNet", {}),
        ("densenet121", "DenseNet", {}),
        ("mobilenet_v2", "MobileNet", {"dropout": 0.0}),
        ("mobilenet_v3_small", "MobileNet", {"dropout": 0.0}),
        ("mobilenet_v3_large", "MobileNet", {"dropout": 0.0}),
        ("efficientnet_b0", "EfficientNet", {}), ("efficientnet_v2_s", "EfficientNet", {}),
        ("regnet_y_400mf", "RegNet", {}), ("regnet_x_400mf", "RegNet", {}),
        ("convnext_tiny", "ConvNeXt", {"stochastic_depth_prob": 0.0}),
        ("swin_t", "Swin", {}), ("swin_v2_t", "Swin", {}),
        ("shufflenet_v2_x0_5", "ShuffleNet", {}), ("squeezenet1_1", "SqueezeNet", {}),
        ("mnasnet0_5", "MNASNet", {}), ("googlenet", "GoogLeNet", {"aux_logits": False, "init_weights": True}),
]:
    _add(_name, _fam, "torchvision", "torchvision %s, 10 classes, 3x32x32" % _name,
         _vision(_name, **_kw))
_add("inception_v3", "Inception", "torchvision", "torchvision inception_v3 (no aux logits), 10 "
     "classes, 3x75x75", _vision("inception_v3", size=75, aux_logits=False, init_weights=True))
_add("alexnet", "AlexNet", "torchvision", "torchvision alexnet, 10 classes, 3x64x64",
     _vision("alexnet", size=64))
_add("maxvit_small", "MaxViT", "torchvision", "torchvision MaxVit: image 32, stem 16, partition 2, "
     "blocks [16, 32] x 1, head dim 8", _small_maxvit)
_add("r3d_18", "Video ResNet", "torchvision", "torchvision r3d_18, 10 classes, 3x4x32x32 clips",
     _video("r3d_18"))
_add("vit_b_16", "ViT", "torchvision", "torchvision vit_b_16 at image size 32 (patch 16), 10 classes",
     _vision("vit_b_16", image_size=32))
_add("vit_small", "ViT", "torchvision", "torchvision VisionTransformer: image 32, patch 8, 2 layers, "
     "2 heads, width 32, MLP 64", _small_vit)
_add("swin_small", "Swin", "torchvision", "torchvision SwinTransformer: patch 4, width 16, depths "
     "[2, 2], heads [2, 4], window 4, 3x32x32", _small_swin)
_add("wav2letter", "Wav2Letter", "torchaudio", "torchaudio Wav2Letter on waveforms (1600 samples), "
     "12 classes, cross-entropy per frame", _wav2letter)
_add("conv_tasnet", "ConvTasNet", "torchaudio", "torchaudio ConvTasNet, 2 sources, small "
     "(16 encoder features, 2 mask layers), 400 samples, MSE", _conv_tasnet)
_add("wav2vec2_small", "Wav2Vec2", "torchaudio", "torchaudio wav2vec2_model: 3 conv layers, layer "
     "norm, 2 pre-norm encoder layers of width 32 (layer drop off), 800 samples, CE per frame", _wav2vec2(False))
_add("hubert_small", "HuBERT", "torchaudio", "torchaudio wav2vec2_model as hubert_base: group-norm "
     "extractor, 2 post-norm encoder layers of width 32 (layer drop off), 800 samples, CE per "
     "frame", _wav2vec2(True))
_add("deepspeech", "DeepSpeech", "torchaudio", "torchaudio DeepSpeech: 16 features, hidden 32, "
     "bidirectional RNN, 10 frames, CE per frame", _deepspeech)
_add("conformer", "Conformer", "torchaudio", "torchaudio Conformer: width 32, 2 heads, 2 layers, "
     "lengths [10, 7] fixed (the padding mask a tensor constant), MSE", _conformer)
_add("conformer_lengths", "Conformer", "torchaudio", "the Conformer with its lengths an input of "
     "the graph", _conformer_lengths)
_add("wavernn", "WaveRNN", "torchaudio", "torchaudio WaveRNN: upsample [2, 2], 2 residual blocks, "
     "GRU 16, 16 classes, 24 samples", _wavernn)
_add("hdemucs", "HDemucs", "torchaudio", "torchaudio HDemucs: 2 sources, mono, 8 channels, depth 2, "
     "nfft 64 (STFT, complex spectrogram), 256 samples, MSE", _hdemucs)
_add("emformer", "Emformer", "torchaudio", "torchaudio Emformer: width 32, 2 heads, 2 layers, "
     "segment 4, right context 1, lengths an input, MSE", _emformer)
_add("tacotron2", "Tacotron2", "torchaudio", "torchaudio Tacotron2 (teacher forcing): 20 symbols, "
     "8 mels, width 16, 5 frames, lengths inputs, MSE of the postnet output", _tacotron2)
_add("transformer_encoder", "TransformerEncoder", "torch.nn", "nn.TransformerEncoder: 2 post-norm "
     "layers, d 32, 4 heads, FF 64, seq 8, MSE", _transformer_encoder())
_add("transformer_encoder_prenorm_mask", "TransformerEncoder", "torch.nn", "nn.TransformerEncoder:"
     " 2 pre-norm layers with a causal float mask, d 32, 4 heads, FF 64, seq 8, MSE",
     _transformer_encoder(norm_first=True, mask=True))


# --- the export worker ----------------------------------------------------------------------------


def _export_stage(tb):
    """'text form' when the export failed writing the graph, else 'make_fx'."""
    writers = {"graph_text", "_arg_text", "annotation", "_op_text", "safetensors_bytes"}
    return "text form" if any(f.name in writers for f in traceback.extract_tb(tb)) else "make_fx"


def _model_frame(tb):
    """'file.py:line: code' of the innermost frame of the model's own code (torchvision,
    torchaudio, torch.nn, this file) in a traceback: where a make_fx failure comes from."""
    keep = ("torchvision", "torchaudio", os.path.join("torch", "nn"), os.path.join("torch", "functional"))
    frames = [f for f in traceback.extract_tb(tb)
              if any(k in f.filename for k in keep) or f.filename == os.path.abspath(__file__)]
    frames = [f for f in frames if "forward" not in (f.line or "") or f is frames[-1]]
    if not frames:
        return None
    f = frames[-1]
    return "%s:%d: %s" % (os.path.basename(f.filename), f.lineno, (f.line or "").strip())


def export_model(name, out_dir):
    """Builds the model, computes eager's step, exports it; writes <name>.case.json last."""
    torch.set_num_threads(1)
    import warnings
    warnings.filterwarnings("ignore")
    prefix = os.path.join(out_dir, name)
    record = {"model": name}

    def finish():
        export._write_files({prefix + ".case.json": json.dumps(record, indent=1).encode()})

    torch.manual_seed(SEED)
    try:
        model, inputs = MODELS[name][3]()
        model.train()
    except Exception as e:  # noqa: BLE001
        record.update(cause="build error", detail="%s: %s" % (type(e).__name__, _first_line(e)))
        return finish()
    record["parameters"] = sum(p.numel() for p in model.parameters())

    # Eager autograd on a copy: loss, every parameter's grad, every buffer after the step.
    eager = copy.deepcopy(model)
    t0 = time.monotonic()
    try:
        torch.manual_seed(0)
        loss = eager(**{k: v.clone() for k, v in inputs.items()})
        loss.backward()
    except Exception as e:  # noqa: BLE001
        record.update(cause="eager error", detail="%s: %s" % (type(e).__name__, _first_line(e)))
        return finish()
    record["eager_s"] = round(time.monotonic() - t0, 3)
    expected = {"out_0": loss.detach()}
    grads = []
    for n, p in eager.named_parameters():
        if p.requires_grad:
            grads.append(export.placeholder_name(n))
            expected["grad_" + export.placeholder_name(n)] = (p.grad if p.grad is not None
                                                   else torch.zeros_like(p)).detach()
    buffers = []
    for n, b in eager.named_buffers():
        buffers.append(export.placeholder_name(n))
        expected[export.placeholder_name(n)] = b.detach().clone()
    record.update(grad=grads, buffers=buffers)

    t0 = time.monotonic()
    try:
        text = export.export(model, inputs, prefix, metadata={"model": name, "seed": SEED})
    except Exception as e:  # noqa: BLE001
        tb = sys.exc_info()[2]
        stage = _export_stage(tb)
        where = _model_frame(tb) if stage == "make_fx" else None
        record.update(cause="export failed (%s)" % stage,
                      detail="%s%s: %s" % ("at %s: " % where if where else "", type(e).__name__,
                                           _first_line(e)))
        return finish()
    record["export_s"] = round(time.monotonic() - t0, 3)
    record["graph_ops"] = sum(1 for line in text.splitlines() if " = torch.ops." in line)
    record["tensor_constants"] = sum(1 for line in text.splitlines() if " = self._tensor_constant" in line)
    export.write_safetensors(prefix + ".expected.safetensors", expected)
    record["export"] = "ok"
    return finish()


def _model_from_files(name, prefix):
    """The model and its inputs as exported: built again, its parameters and buffers (and the
    inputs) read back from <prefix>.inputs.safetensors."""
    torch.manual_seed(SEED)
    model, inputs = MODELS[name][3]()
    model.train()
    values, _ = export.read_safetensors(prefix + ".inputs.safetensors")
    with torch.no_grad():
        for n, t in list(model.named_parameters()) + list(model.named_buffers()):
            t.copy_(values[export.placeholder_name(n)])
    return model, {k: values[k] for k in inputs}


def finite_differences(name, out_dir, grads):
    """`_fd`: the float64 central difference of the loss along a seeded random direction of each
    parameter of `grads` (placeholder names), the second opinion on a grad where aotgrad and eager
    disagree (eager's float32 kernels can be wrong). Writes <name>.fd.safetensors (v_<p>, d_<p>)."""
    torch.set_num_threads(1)
    prefix = os.path.join(out_dir, name)
    model, inputs = _model_from_files(name, prefix)
    model.double()
    inputs = {k: v.double() if v.is_floating_point() else v for k, v in inputs.items()}
    params = {export.placeholder_name(n): p for n, p in model.named_parameters()}
    out = {}
    eps = 1e-6
    with torch.no_grad():
        for g in grads:
            p = params[g]
            gen = torch.Generator().manual_seed(seed_of(name + "/" + g))
            v = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            base = p.clone()
            vals = []
            for sign in (1, -1):
                p.copy_(base + sign * eps * v)
                torch.manual_seed(0)
                vals.append(float(model(**inputs)))
            p.copy_(base)
            out["v_" + g], out["d_" + g] = v, torch.tensor((vals[0] - vals[1]) / (2 * eps),
                                                           dtype=torch.float64)
    export.write_safetensors(prefix + ".fd.safetensors", out)


def functorch_anchor(name, out_dir):
    """`_functorch`: the reference AOTAutograd (PyTorch 2.11's own; bench/compile_compare.py's
    REFERENCE), min-cut partition, no-op compilers, on the exported
    model, timed by bench/compile_compare.py's FunctorchTimer after its untimed warm-up: the
    compilation's wall and CPU time up to the forward compiler, its joint graph's size and saved
    activation bytes. Prints one JSON line."""
    torch.set_num_threads(1)
    import warnings
    warnings.filterwarnings("ignore")
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "bench"))
    import compile_compare
    model, inputs = _model_from_files(name, os.path.join(out_dir, name))
    import functorch_min_cut
    functorch_min_cut.tensor_attributes_as_buffers(model)
    compile_compare.MODELS[name] = ("", lambda: (copy.deepcopy(model), inputs))
    r = compile_compare.measure_functorch(name, 1, 1e9)
    print(json.dumps({"reference": r["reference"],
                      "total_ms": round(r["phases_s"]["total"] * 1e3, 1),
                      "cpu_total_ms": round(r["cpu_phases_s"]["total"] * 1e3, 1),
                      "joint_nodes": r["joint_nodes"],
                      "saved_activation_bytes": r["saved_activation_bytes"]["min_cut"]}))


# --- running aotgrad ------------------------------------------------------------------------------


def _env():
    return dict(os.environ, AOTGRAD_CACHE_DIR="off", OMP_NUM_THREADS="1")


def _run(cmd, timeout):
    """(returncode or None on timeout, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout,
                           env=_env())
    except subprocess.TimeoutExpired:
        return None, "", "", time.monotonic() - t0
    return (p.returncode, p.stdout.decode("utf-8", "replace"), p.stderr.decode("utf-8", "replace"),
            time.monotonic() - t0)


def _failure(rc, stderr, timeout, prefix_dir):
    """(cause, detail) of a failed process."""
    if rc is None:
        return "timeout", "killed after %d s" % timeout
    stderr = stderr.replace(os.path.join(prefix_dir, ""), "")
    if rc < 0:
        return ("crash (signal %d)" % -rc, _last_line(stderr) or signal.Signals(-rc).name)
    cause, detail = classify_error(stderr.replace("aotgrad run: error: ", "")
                                   .replace("aotgrad compile: error: ", ""))
    return (cause if rc == 1 else "%s (exit %d)" % (cause, rc)), detail


def _worst(got, want):
    """max |got - want| / (atol + rtol |want|) over the tensor (the fp32 rule's ratio; <= 1 passes)."""
    g, w = got.double(), want.double()
    if w.numel() == 0 or not (w.is_floating_point()):
        return 0.0
    finite = torch.isfinite(w)
    scale = float(w[finite].abs().max()) if bool(finite.any()) else 0.0
    tol = ATOL * max(1.0, scale) + RTOL * w.abs()
    r = torch.nan_to_num((g - w).abs() / tol, nan=float("inf"))
    r[(torch.isnan(g) & torch.isnan(w)) | (torch.isinf(w) & (g == w))] = 0
    return float(r.max())


def judge(got, inputs, expected):
    """(mismatches [(cause, tensor, why)], worst (ratio, tensor)) of aotgrad's outputs against
    eager's."""
    worst = (0.0, None)
    bad = []
    for name, want in expected.items():
        if name == "out_0":
            kind = "wrong loss"
            g = got.get(name)
        elif name.startswith("grad_"):
            kind = "wrong grad"
            g = got.get(name)
            if g is None:  # no grad written: zero
                g = torch.zeros_like(want)
        else:
            kind = "wrong buffer"
            g = got.get(name, inputs.get(name))  # not written back: as it was
        why = compare(g, want)
        if why is None:
            r = _worst(g, want)
            if r > worst[0]:
                worst = (r, name)
        else:
            bad.append((kind, name, why))
    return bad, worst


def second_opinion(name, out_dir, bad, got, expected, timeout):
    """For mismatched grads only: float64 finite differences (`_fd` worker). Returns
    (cause, detail): (None, note) when they agree with aotgrad's grads and not with eager's."""
    grads = [t[5:] for _, t, _ in bad]
    rc, _, err, _ = _run([sys.executable, os.path.abspath(__file__), "_fd", name, out_dir,
                          ",".join(grads)], timeout)
    kind, tensor, why = bad[0]
    first = "%s: %s (%d tensors differ)" % (tensor, why, len(bad))
    try:
        raw, _ = export.read_safetensors(os.path.join(out_dir, name + ".fd.safetensors"))
    except (OSError, ValueError):
        return kind, first + "; finite differences failed: " + _last_line(err)
    eager_wrong, neither, both = [], [], []
    for g in grads:
        fd = (raw["v_" + g], float(raw["d_" + g]))
        ours = _fd_agrees(got.get("grad_" + g, torch.zeros_like(expected["grad_" + g])), fd)
        theirs = _fd_agrees(expected["grad_" + g], fd)
        if theirs and not ours:
            return kind, "%s; float64 finite differences agree with eager's" % first
        (eager_wrong if ours and not theirs else neither if not ours else both).append(g)
    if both:
        return (kind, "%s; float64 finite differences agree with both aotgrad's and eager's grads "
                "of %s (a difference below their precision)" % (first, ", ".join(both[:3])))
    if neither:
        return (kind, "%s; float64 finite differences agree with neither aotgrad's nor eager's "
                "grads of %s: eager's float32 step is wrong too" % (first, ", ".join(neither[:3])))
    return None, ("eager's grads of %s disagree with float64 finite differences, which agree with "
                  "aotgrad's" % ", ".join(eager_wrong[:3]))


def run_model(name, binary, out_dir, args):
    """One model through the export worker, `aotgrad run --train` and `aotgrad compile`."""
    family, source, description, _ = MODELS[name]
    row = {"model": name, "family": family, "source": source, "description": description}
    prefix = os.path.join(out_dir, name)
    for suffix in (".case.json", ".fx", ".inputs.safetensors", ".expected.safetensors",
                   ".fd.safetensors"):
        if os.path.exists(prefix + suffix):
            os.unlink(prefix + suffix)
    rc, out, err, dt = _run([sys.executable, os.path.abspath(__file__), "_export", name, out_dir],
                            args.export_timeout)
    row["export_wall_s"] = round(dt, 2)
    try:
        with open(prefix + ".case.json") as f:
            case = json.load(f)
    except (OSError, ValueError):
        cause, detail = _failure(rc, err, args.export_timeout, out_dir)
        row.update(result="fail", cause="export worker: " + cause, detail=detail)
        return row
    for k in ("parameters", "export_s", "eager_s", "graph_ops", "tensor_constants"):
        if k in case:
            row[k] = case[k]
    if case.get("export") != "ok":
        row.update(result="fail", cause=case["cause"], detail=case["detail"])
        return row

    grad = ",".join(case["grad"])
    out_path = prefix + ".out.safetensors"
    cmd = [binary, "run", prefix + ".fx", "--inputs=" + prefix + ".inputs.safetensors", "--train",
           "--grad=" + grad, "--seed=0", "--outputs=" + out_path, "--stats=json"]
    rc, out, err, dt = _run(cmd, args.timeout)
    row["run_s"] = round(dt, 2)
    if rc != 0:
        cause, detail = _failure(rc, err, args.timeout, out_dir)
        row.update(result="fail", cause=cause, detail=detail)
        return row
    try:
        got, _ = export.read_safetensors(out_path)
        stats = json.loads(out.strip().splitlines()[-1])
        row["run_compile_ms"] = round(stats.get("compile_us", 0) / 1e3, 1)
    except (OSError, ValueError, IndexError) as e:
        row.update(result="fail", cause="run error", detail="outputs: %s" % e)
        return row
    finally:
        if os.path.exists(out_path):
            os.unlink(out_path)
    inputs, _ = export.read_safetensors(prefix + ".inputs.safetensors")
    expected, _ = export.read_safetensors(prefix + ".expected.safetensors")
    bad, worst = judge(got, inputs, expected)
    row["worst"] = {"ratio": round(worst[0], 4), "tensor": worst[1]}
    row["compared"] = {"grads": len(case["grad"]), "buffers": len(case["buffers"])}
    if not bad:
        row.update(result="pass", cause=None, detail=None)
    elif all(kind == "wrong grad" for kind, _, _ in bad):
        cause, detail = second_opinion(name, out_dir, bad, got, expected, args.export_timeout)
        row.update(result="fail" if cause else "pass", cause=cause, detail=detail)
    else:
        kind, tensor, why = bad[0]
        row.update(result="fail", cause=kind,
                   detail="%s: %s (%d tensors differ)" % (tensor, why, len(bad)))

    # Compile time and the op world's paths: the pipeline alone, with its stats.
    rc, out, err, dt = _run([binary, "compile", prefix + ".fx", "--grad=" + grad, "--stats=json"],
                            args.timeout)
    if rc == 0:
        try:
            s = json.loads(out)
            row["compile"] = {"wall_ms": round(s["total_us"] / 1e3, 1),
                              "cpu_ms": round(s["total_cpu_us"] / 1e3, 1),
                              "joint_nodes": s.get("joint_nodes"), "op_world": s.get("op_world"),
                              "saved_activation_bytes": s.get("saved_activation_bytes")}
        except (ValueError, KeyError):
            pass
    if args.functorch:
        rc, out, err, dt = _run([sys.executable, os.path.abspath(__file__), "_functorch", name,
                                 out_dir], args.export_timeout)
        if rc == 0:
            row["functorch"] = json.loads(out.strip().splitlines()[-1])
        else:
            cause, detail = _failure(rc, err, args.export_timeout, out_dir)
            row["functorch"] = {"error": "%s: %s" % (cause, detail)}
    return row


# --- report -----------------------------------------------------------------------------------------


def _md(text):
    return (text or "").replace("|", "\\|").replace("\n", " ")


def markdown(report, command=None):
    rows = report["models"]
    n_pass = sum(r["result"] == "pass" for r in rows)
    m = report["machine"]
    L = ["## Real models", ""]
    L.append("One training step of torchvision %s, torchaudio %s and torch.nn.TransformerEncoder "
             "models through `tools/export.py` and `aotgrad run --train`, against eager autograd "
             "(torch %s): the loss, every parameter's grad and every buffer after the step "
             "(BatchNorm's running statistics), fp32 rule rtol %g, atol %g x the tensor's scale. "
             "Batch %d, seed %d, training mode, dropout and stochastic depth 0. Written by "
             "`%s` (%s, %s cores, load %s at the start, %s at the end; %.0f s)."
             % (report["torchvision"], report["torchaudio"], report["torch"], RTOL, ATOL, BATCH,
                SEED, command or "scripts/model_sweep.sh", m["date"], m["cores"], m["load"],
                m.get("load_end", "?"), report["total_s"]))
    L.append("")
    reference = next((r["functorch"]["reference"] for r in rows
                      if "reference" in (r.get("functorch") or {})),
                     "PyTorch %s's AOTAutograd" % ".".join(report["torch"].split("+")[0].split(".")[:2]))
    L.append("**%d of %d models pass.** *worst* is the largest error over the compared tensors as "
             "a fraction of its tolerance (1 would fail; *exact*: every value equal), and which "
             "tensor; *compile* is `aotgrad compile --grad --stats=json`'s pipeline wall time (CPU "
             "time in brackets; for a graph with ops the registry does not declare it includes "
             "loading libtorch, some 0.4 s), *in run* the same compilation's wall time inside "
             "`aotgrad run`, libtorch loaded; *PyTorch* is %s (min-cut, "
             "no-op compilers) on the same model and inputs, wall time from the call to the "
             "forward compiler, after a warm-up (bench/compile_compare.py's timer), and *x* its "
             "ratio to *in run*; *saved* the activation bytes the min-cut forward keeps for the "
             "backward, aotgrad / PyTorch; *op world* the graph's nodes of ops the registry does "
             "not declare, and the derivatives and decompositions traced through libtorch."
             % (n_pass, len(rows), reference))
    ratios = [r["functorch"]["total_ms"] / r["run_compile_ms"] for r in rows
              if "total_ms" in r.get("functorch", {}) and r.get("run_compile_ms")]
    if ratios:
        ratios.sort()
        L.append("")
        L.append("Compile time against %s over the %d models both compile: median %.0fx, "
                 "smallest %.0fx; %d of them at least 100x." % (
                     reference, len(ratios), ratios[len(ratios) // 2], ratios[0],
                     sum(x >= 100 for x in ratios)))
    L.append("")
    L.append("| model | source | parameters | graph ops | result | worst | compile ms | in run ms "
             "| PyTorch ms | x | saved KiB | op world |")
    L.append("|---|---|---:|---:|---|---|---:|---:|---:|---:|---:|---|")
    for r in rows:
        if r["result"] == "pass":
            res = "pass"
        else:
            res = "**%s**" % _md(r["cause"])
        w = r.get("worst")
        worst = ("-" if r["result"] != "pass" or not w else
                 "%.3f (%s)" % (w["ratio"], w["tensor"]) if w["tensor"] else "exact")
        c = r.get("compile")
        comp = "%.1f (%.1f)" % (c["wall_ms"], c["cpu_ms"]) if c else "-"
        ow = c and c.get("op_world")
        opw = ("%d / %d / %d" % (ow["nodes_provided"], ow["traced_derivatives"],
                                 ow["traced_decompositions"]) if ow else "-")
        params = "{:,}".format(r["parameters"]) if "parameters" in r else "-"
        ft = r.get("functorch") or {}
        ft_ms = ("%.0f" % ft["total_ms"] if "total_ms" in ft
                 else "error" if "error" in ft else "-")
        ratio = ("%.0f" % (ft["total_ms"] / r["run_compile_ms"])
                 if "total_ms" in ft and r.get("run_compile_ms") else "-")
        ours = c.get("saved_activation_bytes") if c else None
        saved = ("%.0f / %.0f" % (ours / 1024, ft["saved_activation_bytes"] / 1024)
                 if ours is not None and "saved_activation_bytes" in ft else "-")
        L.append("| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            r["model"], r["source"], params, r.get("graph_ops", "-"), res, worst, comp,
            r.get("run_compile_ms", "-"), ft_ms, ratio, saved, opw))
    ft_errors = [r for r in rows if "error" in (r.get("functorch") or {})]
    if ft_errors:
        L.append("")
        L.append("%s failed on: " % reference + "; ".join(
            "%s (`%s`)" % (r["model"], _md(r["functorch"]["error"][:200])) for r in ft_errors) + ".")
    fails = [r for r in rows if r["result"] != "pass"]
    if fails:
        by_cause = {}
        for r in fails:
            by_cause[r["cause"]] = by_cause.get(r["cause"], 0) + 1
        L.append("")
        L.append("Failures and their causes (%s):" % ", ".join(
            "%s %d" % (c, n) for c, n in sorted(by_cause.items(), key=lambda x: -x[1])))
        L.append("")
        for r in fails:
            L.append("- %s: %s: `%s`" % (r["model"], r["cause"], _md((r["detail"] or "")[:400])))
    notes = [r for r in rows if r["result"] == "pass" and r.get("detail")]
    if notes:
        L.append("")
        L.append("Notes on passing models:")
        L.append("")
        for r in notes:
            L.append("- %s: %s" % (r["model"], _md(r["detail"])))
    return "\n".join(L) + "\n"


def put_into_benchmarks(report_path, bench_path, command):
    with open(report_path) as f:
        section = markdown(json.load(f), command).rstrip("\n")
    benchmarks_md.put_section(bench_path, "model_sweep", section)


def read_expected(path):
    """{model: 'pass' | 'fail'} of an expected-results file: `<model> pass|fail  # note`."""
    out = {}
    with open(path) as f:
        for k, line in enumerate(f, 1):
            line = line.split("#", 1)[0].split()
            if not line:
                continue
            if len(line) != 2 or line[1] not in ("pass", "fail") or line[0] not in MODELS:
                raise SystemExit("model_sweep.py: %s:%d: expected '<model> pass|fail' with a model "
                                 "of `model_sweep.py list`" % (path, k))
            out[line[0]] = line[1]
    return out


def expected_text(report):
    lines = ["# Expected results of the model sweep's CI sample (tools/model_sweep.py): a model",
             "# listed as pass that fails is a regression (the test fails); one listed as fail",
             "# that passes is an improvement (the test says so: update this file).", ""]
    for r in report["models"]:
        note = "  # %s: %s" % (r["cause"], (r["detail"] or "")[:80]) if r["result"] != "pass" else ""
        lines.append("%-36s %s%s" % (r["model"], r["result"], note))
    return "\n".join(lines) + "\n"


def check_expected(report, path, report_path=None):
    want = read_expected(path)
    got = {r["model"]: r for r in report["models"]}
    status = 0
    for name, w in want.items():
        r = got.get(name)
        if r is None:
            print("MISSING: %s is listed in %s but was not run" % (name, path))
            status = 1
        elif w == "pass" and r["result"] != "pass":
            print("REGRESSION: %s: %s: %s" % (name, r["cause"], r["detail"]))
            status = 1
        elif w == "fail" and r["result"] == "pass":
            print("IMPROVED: %s passes (update %s: tools/model_sweep.py expected %s)"
                  % (name, path, report_path or "REPORT.json"))
    return status


# --- the sweep ------------------------------------------------------------------------------------


def _models(args):
    if args.models_file:
        names = list(read_expected(args.models_file))
    elif args.models:
        names = [n for n in args.models.split(",") if n]
    else:
        names = list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise SystemExit("model_sweep.py: unknown model(s): %s (`model_sweep.py list` lists them)"
                         % ", ".join(unknown))
    return names


def sweep(args):
    t0 = time.monotonic()
    machine = _machine()
    binary = os.path.abspath(args.aotgrad)
    if not os.access(binary, os.X_OK):
        raise SystemExit("model_sweep.py: %s is not an executable" % binary)
    names = _models(args)
    models_dir = os.path.join(args.out, "models")
    os.makedirs(models_dir, exist_ok=True)
    rows = []
    for name in names:
        row = run_model(name, binary, models_dir, args)
        rows.append(row)
        print("  %-34s %-5s %s%s" % (name, row["result"], row["cause"] or "",
                                     (": " + (row["detail"] or "")[:160]) if row["cause"] else ""),
              flush=True)
    tv = ta = "absent"
    try:
        import torchvision
        tv = torchvision.__version__
    except ImportError:
        pass
    try:
        import torchaudio
        ta = torchaudio.__version__
    except ImportError:
        pass
    report = {"torch": torch.__version__, "torchvision": tv, "torchaudio": ta,
              "machine": dict(machine, load_end=_machine()["load"]), "rtol": RTOL, "atol": ATOL,
              "total_s": round(time.monotonic() - t0, 1), "models": rows}
    export._write_files({os.path.join(args.out, "report.json"):
                         json.dumps(report, indent=1, sort_keys=True).encode(),
                         os.path.join(args.out, "report.md"): markdown(report).encode()})
    n = sum(r["result"] == "pass" for r in rows)
    print("model_sweep: %d of %d models pass (%.0f s); wrote %s" % (
        n, len(rows), report["total_s"], os.path.join(args.out, "report.json")), flush=True)
    if args.expected:
        return check_expected(report, args.expected, os.path.join(args.out, "report.json"))
    return 0


def main(argv=None):
    p = argparse.ArgumentParser(prog="model_sweep.py", description=__doc__.split("\n\n")[0],
                                epilog="usage:" + __doc__.split("usage:", 1)[1],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("run", help="run the sweep")
    r.add_argument("--aotgrad", required=True, help="the aotgrad executable")
    r.add_argument("--out", required=True, help="directory for report.json, report.md, models/")
    r.add_argument("--models", default=None, help="comma-separated model names (default: all)")
    r.add_argument("--models-file", default=None, help="the models of an expected-results file")
    r.add_argument("--timeout", type=int, default=300, help="seconds per aotgrad run (default 300)")
    r.add_argument("--export-timeout", type=int, default=600,
                   help="seconds per model in the export worker (default 600)")
    r.add_argument("--expected", default=None, help="expected results; exit 1 on a regression")
    w = sub.add_parser("_export", help="(internal) the export worker")
    w.add_argument("model")
    w.add_argument("out_dir")
    r.add_argument("--no-functorch", dest="functorch", action="store_false",
                   help="skip PyTorch's own AOTAutograd (the compile-time anchor)")
    ft = sub.add_parser("_functorch", help="(internal) PyTorch's AOTAutograd on a model")
    ft.add_argument("model")
    ft.add_argument("out_dir")
    fd = sub.add_parser("_fd", help="(internal) float64 finite differences of some grads")
    fd.add_argument("model")
    fd.add_argument("out_dir")
    fd.add_argument("grads")
    sub.add_parser("list", help="print the models")
    e = sub.add_parser("expected", help="print an expected-results file from a report.json")
    e.add_argument("report")
    bm = sub.add_parser("benchmarks", help="put a report into BENCHMARKS.md between markers")
    bm.add_argument("report")
    bm.add_argument("benchmarks_md")
    bm.add_argument("--command", default=None)
    ck = sub.add_parser("check", help="check a report against expected results")
    ck.add_argument("report")
    ck.add_argument("expected")
    args = p.parse_args(argv)
    if args.cmd == "_export":
        export_model(args.model, args.out_dir)
        return 0
    if args.cmd == "_functorch":
        functorch_anchor(args.model, args.out_dir)
        return 0
    if args.cmd == "_fd":
        finite_differences(args.model, args.out_dir, args.grads.split(","))
        return 0
    if args.cmd == "list":
        for k, (fam, src, desc, _) in MODELS.items():
            print("%-34s %-12s %s" % (k, src, desc))
        return 0
    if args.cmd == "expected":
        with open(args.report) as f:
            sys.stdout.write(expected_text(json.load(f)))
        return 0
    if args.cmd == "benchmarks":
        put_into_benchmarks(args.report, args.benchmarks_md, args.command)
        return 0
    if args.cmd == "check":
        with open(args.report) as f:
            return check_expected(json.load(f), args.expected)
    return sweep(args)


if __name__ == "__main__":
    sys.exit(main())
