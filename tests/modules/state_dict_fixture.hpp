#pragma once
// The state_dict of a basic_modules fixture case, built from its state.<key>.npy files (key
// order and integer flags from params.json), so module tests do not depend on the safetensors
// reader. load_weights() reads weights.safetensors instead once io/safetensors.hpp exists.
#include <string>

#include "cvattn/core/state_dict.hpp"
#include "support/fixtures.hpp"

#if __has_include("cvattn/io/safetensors.hpp")
#include "cvattn/io/safetensors.hpp"
#define CVATTN_TEST_HAS_SAFETENSORS 1
#endif

namespace cvattn::test {

inline StateDict state_dict_from_npy(const Fixture& fx) {
  StateDict dict;
  const auto& integer = fx.params()["integer_keys"];
  for (const auto& k : fx.params()["keys"]) {
    const std::string key = k.get<std::string>();
    bool is_integer = false;
    for (const auto& i : integer) is_integer |= i.get<std::string>() == key;
    dict.set(key, fx.tensor("state." + key), is_integer);
  }
  return dict;
}

inline StateDict load_weights(const Fixture& fx) {
#ifdef CVATTN_TEST_HAS_SAFETENSORS
  return io::load_safetensors(fx.path("weights.safetensors"));
#else
  return state_dict_from_npy(fx);
#endif
}

}  // namespace cvattn::test
