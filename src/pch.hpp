#pragma once
// Precompiled once per build for every library source (src/CMakeLists.txt): the standard headers
// most sources use and cvattn's core headers, which pull in OpenCV's cv::Mat. Parsing them was
// most of the compile time of a typical module or functional source. No Highway header here:
// the kernel sources include Highway themselves, once per target.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/error.hpp"
#include "cvattn/core/module.hpp"
#include "cvattn/core/options.hpp"
#include "cvattn/core/state_dict.hpp"
#include "cvattn/core/tensor.hpp"
