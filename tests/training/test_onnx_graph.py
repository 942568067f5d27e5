"""The exported graph's clean-up (explorer/training/onnx_graph.py): the work it drops is work
no output needs, so every output stays the same bit for bit, and the shipped skill encoder is
already clean."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime
from onnx import TensorProto, helper, numpy_helper

from explorer.engine.inference.models import PACKAGED_ENCODER_MODEL
from explorer.training.onnx_graph import simplify_model

LAYERS = 3


def _constant(name: str, value: float) -> onnx.NodeProto:
    tensor = numpy_helper.from_array(np.array(value, dtype=np.float32), name=f"{name}_value")
    return helper.make_node("Constant", [], [name], value=tensor)


def _attention_like() -> onnx.ModelProto:
    """A stack of masked softmaxes written as torch's exporter writes attention: each layer
    guards its softmax with Where(IsNaN(p), 0, p). A Relu guarded the same way is not a
    softmax: its guard stays."""
    nodes: list[onnx.NodeProto] = []
    hidden = "scores"
    for layer in range(LAYERS):
        nodes += [
            _constant(f"zero{layer}", 0.0),
            _constant(f"minus_inf{layer}", -np.inf),
            helper.make_node(
                "Where", ["keep", f"zero{layer}", f"minus_inf{layer}"], [f"mask{layer}"]
            ),
            helper.make_node("Add", [hidden, f"mask{layer}"], [f"masked{layer}"]),
            helper.make_node("Softmax", [f"masked{layer}"], [f"p{layer}"], axis=-1),
            helper.make_node("IsNaN", [f"p{layer}"], [f"nan{layer}"]),
            helper.make_node(
                "Where", [f"nan{layer}", f"zero{layer}", f"p{layer}"], [f"guarded{layer}"]
            ),
            helper.make_node("Add", [f"guarded{layer}", "scores"], [f"hidden{layer}"]),
        ]
        hidden = f"hidden{layer}"
    nodes += [
        helper.make_node("Relu", ["scores"], ["relu"]),
        helper.make_node("IsNaN", ["relu"], ["relu_nan"]),
        helper.make_node("Where", ["relu_nan", "zero0", "relu"], ["relu_guarded"]),
        helper.make_node("Add", [hidden, "relu_guarded"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "attention_like",
        [
            helper.make_tensor_value_info("scores", TensorProto.FLOAT, [2, 3, 4]),
            helper.make_tensor_value_info("keep", TensorProto.BOOL, [2, 1, 4]),
        ],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 3, 4])],
    )
    opset = helper.make_opsetid("", 17)
    # The lowest IR version the opset allows: the oldest onnxruntime we support reads it.
    model = helper.make_model(
        graph, opset_imports=[opset], ir_version=helper.find_min_ir_version_for([opset])
    )
    onnx.checker.check_model(model)
    return model


def _run(model: onnx.ModelProto, keep: np.ndarray) -> np.ndarray:
    session = onnxruntime.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    scores = np.random.default_rng(7).normal(size=(2, 3, 4)).astype(np.float32)
    output: np.ndarray = session.run(None, {"scores": scores, "keep": keep})[0]
    return output


def _count(model: onnx.ModelProto, op_type: str) -> int:
    return sum(node.op_type == op_type for node in model.graph.node)


def test_the_softmax_guards_go_and_every_output_bit_stays() -> None:
    model = _attention_like()
    keep = np.array([[[True, True, False, False]], [[True, False, True, True]]])
    before = _run(model, keep)
    simplify_model(model)
    onnx.checker.check_model(model)
    assert _count(model, "Softmax") == LAYERS
    assert _count(model, "IsNaN") == 1  # the Relu's guard
    assert _count(model, "Where") == LAYERS + 1  # the masks, and the Relu's guard
    assert [value.name for value in model.graph.output] == ["out"]
    after = _run(model, keep)
    assert before.tobytes() == after.tobytes()


def test_it_relies_on_every_row_keeping_a_token() -> None:
    """A row with every key masked is where the guard mattered: the router never makes one
    (each tokenised text keeps its [CLS]), and this is why that must stay so."""
    model = _attention_like()
    keep = np.array([[[False, False, False, False]], [[True, False, True, True]]])
    guarded = _run(model, keep)
    simplify_model(model)
    bare = _run(model, keep)
    assert np.isfinite(guarded).all() and np.isnan(bare[0]).all()
    assert bare[1].tobytes() == guarded[1].tobytes()


def test_the_shipped_skill_encoder_is_already_simplified() -> None:
    """The export simplifies (training/encoder.py); a file shipped without it would cost
    about a fifth more to embed with."""
    model = onnx.load(str(PACKAGED_ENCODER_MODEL))
    nodes = len(model.graph.node)
    assert nodes and _count(model, "IsNaN") == 0
    simplify_model(model)
    assert len(model.graph.node) == nodes
