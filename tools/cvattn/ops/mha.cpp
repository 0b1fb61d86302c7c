#include <memory>

#include "cvattn/modules/multihead_attention.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

OpSpec mha() {
  return {
      "mha",
      "torch.nn.MultiheadAttention(batch_first=True) (E, kdim, vdim, bias and add_bias_kv from "
      "the weights)",
      {{"query", "[N,L,E]"}, {"key", "[N,S,kdim]"}, {"value", "[N,S,vdim]"}},
      true,
      {{"num_heads", SettingType::integer, "", "heads; must divide E"},
       {"average_attn_weights", SettingType::boolean, "true", "mean of the weights over heads"}},
      {{"output", "[N,L,E]"}, {"attn_weights", "[N,L,S] or [N,num_heads,L,S]"}},
      [](const Invocation& inv) -> Computation {
        const StateDict& weights = *inv.weights;
        auto module = std::make_shared<MultiheadAttention>(
            MultiheadAttentionOptions::from_state_dict(weights, inv.settings.integer("num_heads")));
        module->load_state_dict(weights);
        const auto call = MultiheadAttentionCall().average_attn_weights(
            inv.settings.boolean("average_attn_weights"));
        const Tensor q = inv.input("query"), k = inv.input("key"), v = inv.input("value");
        return [module, q, k, v, call] {
          functional::AttentionResult r = module->forward(q, k, v, call);
          return Outputs{{"output", r.output}, {"attn_weights", r.attn_weights}};
        };
      },
  };
}

}  // namespace cvattn::cli::ops
