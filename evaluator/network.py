"""One of wildbg's dense networks in numpy: inputs -> three hidden layers -> a softmax over the
six exclusive results (win single, win gammon, win backgammon, lose single, lose gammon, lose
backgammon), for a whole batch in one matrix product per layer."""

from __future__ import annotations

from pathlib import Path

import numpy as np


class Network:
    def __init__(self, path: Path) -> None:
        with np.load(path) as data:
            self.activation = str(data["activation"])
            count = sum(1 for name in data.files if name.startswith("w"))
            self.layers = [(data[f"w{i}"], data[f"b{i}"]) for i in range(count)]
        if self.activation not in ("relu", "hard_sigmoid"):
            raise ValueError(f"{path}: unknown activation {self.activation!r}")
        self.inputs = self.layers[0][0].shape[0]

    def __call__(self, inputs: np.ndarray) -> np.ndarray:
        """(N, inputs) float32 -> (N, 6) probabilities."""
        if inputs.ndim != 2 or inputs.shape[1] != self.inputs:
            raise ValueError(f"expected (N, {self.inputs}) inputs, got {inputs.shape}")
        x = inputs
        for w, b in self.layers[:-1]:
            x = x @ w + b
            if self.activation == "relu":
                np.maximum(x, 0, out=x)
            else:  # ONNX HardSigmoid with alpha 1/6, beta 1/2
                x *= np.float32(1 / 6)
                x += np.float32(0.5)
                np.clip(x, 0, 1, out=x)
        w, b = self.layers[-1]
        logits = x @ w + b
        logits -= logits.max(axis=1, keepdims=True)
        e = np.exp(logits)
        out: np.ndarray = e / e.sum(axis=1, keepdims=True)
        return out
