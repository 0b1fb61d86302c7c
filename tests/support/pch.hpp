#pragma once
// Precompiled once for every test program (tests/CMakeLists.txt): GoogleTest/GoogleMock,
// nlohmann-json and OpenCV's core are the bulk of each test source's parse time.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <opencv2/core.hpp>
#include <string>
#include <thread>
#include <vector>

#include "cvattn/core/tensor.hpp"
