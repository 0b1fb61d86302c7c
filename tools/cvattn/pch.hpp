#pragma once
// Precompiled once per build for every source of the tool (tools/cvattn/CMakeLists.txt): the
// op interface every source includes and what it brings (the standard containers, cvattn's
// tensor and state dict, OpenCV's cv::Mat) were most of each source's compile time.
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "cvattn/core/error.hpp"
#include "op.hpp"
