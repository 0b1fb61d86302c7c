#pragma once
// Pieces shared by the ops of timm's gates (ese, ceca, ge, gc, lcbam, coord_attn, splat,
// cond_conv, dynamic_conv): the gate_layer setting, a forward-with-maps computation, and the
// error for a --set value that the weights contradict.
#include <algorithm>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/attention_maps.hpp"
#include "cvattn/core/error.hpp"
#include "cvattn/modules/layer_kinds.hpp"
#include "op.hpp"

namespace cvattn::cli::ops::gates {

inline SettingSpec gate_layer_setting(const std::string& fallback) {
  return {"gate_layer",
          SettingType::word,
          fallback,
          "gate applied to the attention logits",
          {"sigmoid", "hard_sigmoid", "tanh"}};
}

inline GateLayer gate_layer(const Invocation& inv) {
  return parse_gate_layer(inv.settings.word("gate_layer"));
}

// Runs module->forward_with_maps(input) and names its output and the maps in `names` (a map a
// module did not produce is left out, so asking for it is the CLI's "produced no" error). When
// --out asks for none of the maps, runs module->forward(input) alone: the maps are not computed.
template <class M>
Computation with_maps(const Invocation& inv, std::shared_ptr<M> module, Tensor input,
                      std::vector<std::string> names) {
  const bool maps_wanted =
      std::any_of(names.begin(), names.end(), [&](const std::string& n) { return inv.wants(n); });
  if (!maps_wanted) {
    return [module, input] { return Outputs{{"output", module->forward(input)}}; };
  }
  return [module, input, names] {
    Attended r = module->forward_with_maps(input);
    Outputs out{{"output", r.output}};
    for (const auto& n : names) {
      if (r.maps.contains(n)) out.emplace(n, r.maps.at(n));
    }
    return out;
  };
}

// ValueError "<op>: --set <key>=<given> contradicts the weights: <what the weights say>".
[[noreturn]] inline void contradiction(const std::string& op, const std::string& key,
                                       const std::string& given, const std::string& weights) {
  throw ValueError(op + ": --set " + key + "=" + given + " contradicts the weights: " + weights);
}

inline std::string pair_text(Pair2 p) { return std::to_string(p.h) + "," + std::to_string(p.w); }

}  // namespace cvattn::cli::ops::gates
