#pragma once
// The cases of tests/fixtures/models/ (tests/fixtures/models.py): each names a timm model, a
// seed for its generated weights and input, and the weights' checksum.
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

inline Shape shape_of(const nlohmann::json& j) {
  Shape s;
  for (const auto& d : j) s.push_back(d.get<std::int64_t>());
  return s;
}

// The case's generated state_dict; the checksum must equal the one models.py computed.
inline StateDict weights_for(const Fixture& fx) {
  const auto skeleton = models::build(fx.params()["model_name"].get<std::string>(),
                                      fx.params()["num_classes"].get<std::int64_t>());
  GeneratedWeights w = generated_state_dict(*skeleton, fx.params()["seed"].get<std::uint64_t>());
  EXPECT_EQ(hex(w.checksum), fx.params()["checksum"].get<std::string>())
      << fx.name() << ": the C++ weight generator differs from models.py";
  return w.dict;
}

// The network of a fixture case with its generated weights, through models::create.
inline std::shared_ptr<models::Network> network_for(const Fixture& fx) {
  return models::create(fx.params()["model_name"].get<std::string>(), weights_for(fx));
}

inline Tensor input_for(const Fixture& fx) {
  return generated("input", shape_of(fx.params()["input_shape"]),
                   fx.params()["seed"].get<std::uint64_t>());
}

}  // namespace cvattn::test
