#pragma once
// Umbrella header: everything public in cvattn.
#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/core/image.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/parallel.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
#include "cvattn/functional/conv.hpp"
#include "cvattn/io/npy.hpp"
#include "cvattn/io/safetensors.hpp"
#include "cvattn/version.hpp"
