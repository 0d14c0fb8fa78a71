// Precompiled header of the extension: the heavy PyTorch headers every torch-facing file includes.
#pragma once

#include <ATen/ATen.h>
#include <torch/library.h>
