"""Exported graphs made cheaper to run without changing a single output bit.

torch's exporter writes a BERT's attention with a guard after each softmax,
`Where(IsNaN(p), 0, p)`, for a row whose every key is masked (docs/models.md, "The skill
encoder's graph"). A tokenised text never makes one: each row keeps at least its [CLS]
token, so the guard always passes `p` through, reading and writing a batch x heads x
length x length tensor twice a layer. `simplify` removes the guards and whatever only
they read: on the skill encoder, 18 nodes and about a fifth of a library's embedding
time, with the same vectors.

Needs `onnx` (the train and test extras); the runtime never imports this module.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from onnx import GraphProto, ModelProto, NodeProto


def simplify(path: Path) -> int:
    """Rewrite the ONNX file at `path` in place; return how many nodes it lost."""
    import onnx

    model = onnx.load(str(path))
    before = len(model.graph.node)
    simplify_model(model)
    onnx.checker.check_model(model)
    onnx.save(model, str(path))
    return before - len(model.graph.node)


def simplify_model(model: ModelProto) -> None:
    """The rewrite of `simplify` on a loaded model (its main graph, in place)."""
    graph = model.graph
    if any(
        attribute.g.node or attribute.graphs for node in graph.node for attribute in node.attribute
    ):
        raise ValueError("a graph with subgraphs (If, Loop, Scan) is not simplified")
    _rename_inputs(graph, _softmax_nan_guards(graph))
    _drop_unread(graph)


def _softmax_nan_guards(graph: GraphProto) -> dict[str, str]:
    """`Where(IsNaN(p), c, p)` with `p` a Softmax's output: each guard's output -> `p`."""
    producers = {output: node for node in graph.node for output in node.output}
    renamed = {}
    for node in graph.node:
        if node.op_type != "Where" or len(node.input) != 3 or _writes_graph_output(graph, node):
            continue
        condition, _, passed = node.input
        test, softmax = producers.get(condition), producers.get(passed)
        if (
            test is not None
            and test.op_type == "IsNaN"
            and test.input[0] == passed
            and softmax is not None
            and softmax.op_type == "Softmax"
        ):
            renamed[node.output[0]] = passed
    return renamed


def _writes_graph_output(graph: GraphProto, node: NodeProto) -> bool:
    """Such a node stays: the graph's outputs keep their names."""
    return any(value.name in node.output for value in graph.output)


def _rename_inputs(graph: GraphProto, renamed: dict[str, str]) -> None:
    for node in graph.node:
        for position, name in enumerate(node.input):
            node.input[position] = renamed.get(name, name)


def _drop_unread(graph: GraphProto) -> None:
    """Remove nodes none of whose outputs is read, until none is left."""
    while True:
        read = {name for node in graph.node for name in node.input}
        read |= {value.name for value in graph.output}
        kept = [node for node in graph.node if any(output in read for output in node.output)]
        if len(kept) == len(graph.node):
            return
        del graph.node[:]
        graph.node.extend(kept)
