#pragma once
// The cases of tests/fixtures/models/ (tests/fixtures/models.py): each names a timm model, a
// seed for its generated weights and input, and the weights' checksum. The functions that read
// the cases are compiled once, in model_fixtures.cpp.
#include <gtest/gtest.h>

#include <cstdio>
#include <memory>
#include <string>

#include "cvattn/models/timm.hpp"
#include "support/fixtures.hpp"
#include "support/model_weights.hpp"

namespace cvattn::test {

inline constexpr Tolerance kExact{0.0, 0.0};

inline std::string hex(std::uint64_t v) {
  char buf[20];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

// A params.json list of sizes.
[[nodiscard]] Shape shape_of(const nlohmann::json& j);

// The case's generated state_dict; the checksum must equal the one models.py computed.
[[nodiscard]] StateDict weights_for(const Fixture& fx);

// The network of a fixture case with its generated weights, through models::create.
[[nodiscard]] std::shared_ptr<models::Network> network_for(const Fixture& fx);

// The case's generated input.
[[nodiscard]] Tensor input_for(const Fixture& fx);

}  // namespace cvattn::test
