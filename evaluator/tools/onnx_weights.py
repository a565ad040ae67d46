"""Convert one of wildbg's ONNX networks into the `.npz` that evaluator/network.py runs:
`python -m evaluator.tools.onnx_weights contact.onnx evaluator/weights/contact.npz`.

A developer's tool (the `onnx` package is a dev dependency, never a service's): it refuses any
graph that is not the plain stack network.py computes (Gemm, an activation, ... Gemm, Softmax),
so a new network with another shape cannot be converted into something run wrongly."""

from __future__ import annotations

import argparse
import hashlib
from pathlib import Path

import numpy as np
import onnx
from onnx import numpy_helper

ACTIVATIONS = {"Relu": "relu", "HardSigmoid": "hard_sigmoid"}


def convert(source: Path, target: Path) -> str:
    """Write `target` from `source`; returns the activation's name."""
    model = onnx.load(str(source))
    weights = {t.name: numpy_helper.to_array(t) for t in model.graph.initializer}
    ops = [node.op_type for node in model.graph.node]
    layers = [node for node in model.graph.node if node.op_type == "Gemm"]
    kinds = {op for op in ops if op not in ("Gemm", "Softmax")}
    if ops[-1] != "Softmax" or len(kinds) != 1 or not kinds <= set(ACTIVATIONS):
        raise SystemExit(f"{source}: not a Gemm/activation/Softmax stack: {ops}")
    for node in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if node.op_type == "Gemm" and attrs != {"alpha": 1.0, "beta": 1.0, "transB": 1}:
            raise SystemExit(f"{source}: a Gemm with {attrs}")
        if node.op_type == "HardSigmoid" and abs(attrs.get("alpha", 0.2) - 1 / 6) > 1e-7:
            raise SystemExit(f"{source}: a HardSigmoid with {attrs}")  # network.py: x/6 + 1/2
    arrays: dict[str, np.ndarray] = {}
    for i, node in enumerate(layers):
        arrays[f"w{i}"] = weights[node.input[1]].astype(np.float32).T.copy()  # (inputs, outputs)
        arrays[f"b{i}"] = weights[node.input[2]].astype(np.float32)
    activation = ACTIVATIONS[kinds.pop()]
    np.savez(target, activation=np.array(activation), **arrays)  # type: ignore[arg-type]
    return activation


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("target", type=Path)
    args = parser.parse_args()
    activation = convert(args.source, args.target)
    digest = hashlib.sha256(args.source.read_bytes()).hexdigest()
    print(f"{args.target}: {activation} network from {args.source} (sha256 {digest})")


if __name__ == "__main__":
    main()
