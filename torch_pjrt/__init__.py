"""torch_pjrt: PyTorch device "tpu" over the OpenXLA PJRT C API."""


def _autoload():
    pass
