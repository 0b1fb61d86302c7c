#pragma once
// One factory per op; registry.cpp lists them.
#include "op.hpp"

namespace cvattn::cli::ops {

OpSpec conv2d();

}  // namespace cvattn::cli::ops
