#include "support/model_fixtures.hpp"

#include <gtest/gtest.h>

namespace cvattn::test {

Shape shape_of(const nlohmann::json& j) {
  Shape s;
  for (const auto& d : j) s.push_back(d.get<std::int64_t>());
  return s;
}

StateDict weights_for(const Fixture& fx) {
  const auto skeleton = models::build(fx.params()["model_name"].get<std::string>(),
                                      fx.params()["num_classes"].get<std::int64_t>());
  GeneratedWeights w = generated_state_dict(*skeleton, fx.params()["seed"].get<std::uint64_t>());
  EXPECT_EQ(hex(w.checksum), fx.params()["checksum"].get<std::string>())
      << fx.name() << ": the C++ weight generator differs from models.py";
  return w.dict;
}

std::shared_ptr<models::Network> network_for(const Fixture& fx) {
  return models::create(fx.params()["model_name"].get<std::string>(), weights_for(fx));
}

Tensor input_for(const Fixture& fx) {
  return generated("input", shape_of(fx.params()["input_shape"]),
                   fx.params()["seed"].get<std::uint64_t>());
}

}  // namespace cvattn::test
