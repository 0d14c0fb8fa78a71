"""Running a StableHLO program of your own on "tpu" tensors."""

from . import _C


def run_stablehlo(program, *inputs):
    """Compiles `program` (MLIR text with a public `@main`, cached by its text) and runs it on
    `inputs` ("tpu" tensors on one device, in @main's argument order). Returns a list with one new
    tensor per result. A program the plugin rejects raises RuntimeError with the plugin's message."""
    return _C._run_stablehlo(program, list(inputs))
