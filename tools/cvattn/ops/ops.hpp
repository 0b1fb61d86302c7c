#pragma once
// One factory per op; registry.cpp lists them.
#include "op.hpp"

namespace cvattn::cli::ops {

OpSpec cbam();
OpSpec conv2d();
OpSpec eca();
OpSpec se();

}  // namespace cvattn::cli::ops
