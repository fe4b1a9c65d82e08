"""The merged NLLB decoder (`decoder_model_merged.onnx`) as optimum's `merge_decoders` writes it: the
no-past decoder (step 0: prompt + encoder states → logits, decoder and encoder presents) and the with-past
decoder (later steps: last token + cached keys/values → logits, decoder presents) become the two branches of
one `If` on `use_cache_branch`, and both branches read ONE set of weights from the outer graph. On cached
steps the encoder presents come back empty (MODELS.md), so that both branches have the same outputs.

Why not torch.onnx.export with the weights: at this size the decoder weights are 1.86 GB and the merged file
must stay under protobuf's 2 GB, so nothing may be stored twice. Both graphs are traced without weights
(`export_params=False`, their weights become named graph inputs), and the weights are attached once here:
- each Linear weight is stored transposed, [in, out], as torch's constant folding stores it in a real export;
- the shared embedding is stored once, [vocab, d]: the token lookup gathers from it and the LM head multiplies
  by its transpose, as optimum's tied-weight deduplication leaves it (2 × 1.05 GB otherwise). The Transpose
  sits in the outer graph, so that onnxruntime folds it once at load for both branches.
"""
import io

import numpy as np
import onnx
import torch
from onnx import TensorProto, helper, numpy_helper

OPSET = 14
TIED = "embed_tokens.weight"
PROTOBUF_LIMIT = 2**31


def kv_names(prefix: str, layers: int, parts=("decoder", "encoder")) -> list:
    return [f"{prefix}.{i}.{p}.{kv}" for i in range(layers) for p in parts for kv in ("key", "value")]


class NoPast(torch.nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, encoder_attention_mask, encoder_hidden_states):
        logits, presents = self.decoder(input_ids, encoder_attention_mask, encoder_hidden_states)
        return (logits, *[t for layer in presents for t in layer])


class WithPast(torch.nn.Module):
    def __init__(self, decoder):
        super().__init__()
        self.decoder = decoder

    def forward(self, input_ids, encoder_attention_mask, *past_flat):
        past = [past_flat[i : i + 4] for i in range(0, len(past_flat), 4)]
        logits, presents = self.decoder(input_ids, encoder_attention_mask, past=past)
        return (logits, *[t for layer in presents for t in layer[:2]])


def trace(module, args, inputs, outputs, axes) -> onnx.ModelProto:
    buffer = io.BytesIO()
    with torch.no_grad():
        torch.onnx.export(
            module, args, buffer, input_names=inputs, output_names=outputs, dynamic_axes=axes,
            opset_version=OPSET, export_params=False, do_constant_folding=False,
        )
    return onnx.load_from_string(buffer.getvalue())


def branch(model: onnx.ModelProto, prefix: str, outer: set, weights: dict, attach: dict, outputs: list) -> onnx.GraphProto:
    """A traced graph as an If branch: no inputs of its own (it reads the outer graph's inputs and weights by
    name), its own values prefixed (sibling branches and the outer graph must not share names), Linear
    weights' Transposes replaced by the stored transposed weight, outputs in `outputs` order."""
    graph = model.graph
    rename = {}
    for node in graph.node:
        source = node.input[0] if node.input else ""
        perm = next((list(a.ints) for a in node.attribute if a.name == "perm"), None)
        if node.op_type == "Transpose" and source in weights and perm == [1, 0]:
            name = TIED + ".T" if source == TIED else source + ".T"
            attach[name] = source
            rename[node.output[0]] = name
    for value in graph.input:
        if value.name not in outer and value.name not in weights:
            raise ValueError(f"{prefix}: input {value.name} is neither a merged input nor a weight")
    nodes = []
    for node in graph.node:
        if node.output[0] in rename:
            continue  # a folded Transpose
        for name in node.output:
            rename.setdefault(name, prefix + name)
        node.input[:] = [rename.get(n, n) for n in node.input]
        node.output[:] = [rename[n] for n in node.output]
        node.name = prefix + (node.name or f"{node.op_type}_{len(nodes)}")
        nodes.append(node)
    for name in (n for node in nodes for n in node.input if n):
        if name not in outer and name not in weights and name not in attach and not name.startswith(prefix):
            raise ValueError(f"{prefix}: {name} is read but never produced")
    for name in weights:
        if any(name in node.input for node in nodes):
            attach.setdefault(name, name)
    by_name = {v.name: v for v in graph.output}
    outs = []
    for name in outputs:
        if name in by_name:
            value = by_name[name]
            outs.append(helper.make_tensor_value_info(rename[name], value.type.tensor_type.elem_type, None))
        else:
            raise ValueError(f"{prefix}: no output {name}")
    return helper.make_graph(nodes, prefix.strip("/"), [], outs)


def write_merged_decoder(decoder, cfg: dict, path: str) -> None:
    layers, heads, d = cfg["layers"], cfg["heads"], cfg["d"]
    head_dim = d // heads
    batch, enc = 2, 5
    ids0 = torch.tensor([[2, 256057 % cfg["vocab"]], [2, 256057 % cfg["vocab"]]])
    mask = torch.tensor([[1] * enc, [1, 1, 1, 0, 0]])
    hidden = torch.randn(batch, enc, d)
    presents_dec = kv_names("present", layers, ("decoder",))
    presents_all = kv_names("present", layers)
    past_all = kv_names("past_key_values", layers)
    axes = {"input_ids": {0: "batch_size", 1: "decoder_sequence_length"}, "encoder_attention_mask": {0: "batch_size", 1: "encoder_sequence_length"}}
    axes.update({"encoder_hidden_states": {0: "batch_size", 1: "encoder_sequence_length"}, "logits": {0: "batch_size", 1: "decoder_sequence_length"}})
    for name in past_all:
        axes[name] = {0: "batch_size", 2: "past_decoder_sequence_length" if ".decoder." in name else "encoder_sequence_length_out"}
    for name in presents_all:
        axes[name] = {0: "batch_size", 2: "past_decoder_sequence_length + 1" if ".decoder." in name else "encoder_sequence_length_out"}

    first = trace(NoPast(decoder), (ids0, mask, hidden), ["input_ids", "encoder_attention_mask", "encoder_hidden_states"], ["logits", *presents_all], axes)
    past = [torch.randn(batch, heads, 2 if ".decoder." in n else enc, head_dim) for n in past_all]
    cached = trace(WithPast(decoder), (ids0[:, -1:], mask, *past), ["input_ids", "encoder_attention_mask", *past_all], ["logits", *presents_dec], axes)

    weights = {k.removeprefix("decoder."): v for k, v in NoPast(decoder).state_dict().items()}
    for model in (first, cached):  # the traced graphs name weights by state_dict key; drop the wrapper's prefix
        for node in model.graph.node:
            node.input[:] = [n.removeprefix("decoder.") for n in node.input]
        for value in model.graph.input:
            value.name = value.name.removeprefix("decoder.")

    outer_inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch_size", "decoder_sequence_length"]),
        helper.make_tensor_value_info("encoder_attention_mask", TensorProto.INT64, ["batch_size", "encoder_sequence_length"]),
        helper.make_tensor_value_info("encoder_hidden_states", TensorProto.FLOAT, ["batch_size", "encoder_sequence_length", d]),
        *[helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch_size", heads, axes[n][2], head_dim]) for n in past_all],
        helper.make_tensor_value_info("use_cache_branch", TensorProto.BOOL, [1]),
    ]
    outer = {v.name for v in outer_inputs}
    attach = {}
    order = ["logits", *presents_all]
    no_past = branch(first, "no_past/", outer, weights, attach, order)
    # The with-past graph has no encoder presents: constant empty tensors take their place.
    for name in presents_all:
        if ".encoder." in name:
            cached.graph.node.append(helper.make_node("Constant", [], [name], value=helper.make_tensor(name + ".empty", TensorProto.FLOAT, [0, heads, 0, head_dim], [])))
            cached.graph.output.append(helper.make_tensor_value_info(name, TensorProto.FLOAT, None))
    with_past = branch(cached, "with_past/", outer, weights, attach, order)

    nodes = []
    if TIED + ".T" in attach:  # the LM head's transpose of the shared embedding, computed once for both branches
        del attach[TIED + ".T"]
        attach.setdefault(TIED, TIED)
        nodes.append(helper.make_node("Transpose", [TIED], [TIED + ".T"], name="lm_head_transpose", perm=[1, 0]))
    nodes.append(helper.make_node("If", ["use_cache_branch"], order, name="optimum::if", then_branch=with_past, else_branch=no_past))
    initializers = []
    for name, source in sorted(attach.items()):
        array = weights[source].detach().numpy()
        initializers.append(numpy_helper.from_array(np.ascontiguousarray(array.T if name != source else array), name))
    outputs = [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch_size", "decoder_sequence_length", cfg["vocab"]])]
    outputs += [helper.make_tensor_value_info(n, TensorProto.FLOAT, ["batch_size", heads, axes[n][2], head_dim]) for n in presents_all]
    graph = helper.make_graph(nodes, "merged_decoder", outer_inputs, outputs, initializers)
    merged = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="kuma real-size pack (torch + nllb_merge)")
    merged.ir_version = first.ir_version
    size = merged.ByteSize()
    if size >= PROTOBUF_LIMIT:
        raise ValueError(f"the merged decoder is {size} bytes, over protobuf's 2 GB: a weight is stored twice")
    onnx.save(merged, path)
