#pragma once
// One factory per op; registry.cpp lists them.
#include "op.hpp"

namespace cvattn::cli::ops {

OpSpec conv2d();
OpSpec sk();

}  // namespace cvattn::cli::ops
