// scaled_dot_product_attention and position_encoding (docs/modules.md §11, §13): functional ops.
#include "cvattn/functional/attention.hpp"

#include "cvattn/functional/position_encoding.hpp"
#include "ops/ops.hpp"

namespace cvattn::cli::ops {

namespace F = cvattn::functional;

OpSpec scaled_dot_product_attention() {
  return {
      "scaled_dot_product_attention",
      "softmax(Q K^T * scale + attn_mask) V (torch.nn.functional.scaled_dot_product_attention); "
      "fully masked rows give zeros",
      {{"query", "[B...,L,E]"},
       {"key", "[B...,S,E]"},
       {"value", "[B...,S,Ev]"},
       {"attn_mask", "[L,S] or broadcastable, additive float", true}},
      false,
      {{"is_causal", SettingType::boolean, "false", "query i attends keys j <= i (top-left)"},
       {"scale", SettingType::real, "", "score multiplier (default 1/sqrt(E))", {}, true}},
      {{"output", "[B...,L,Ev]"}, {"attn_weights", "[B...,L,S]"}},
      [](const Invocation& inv) -> Computation {
        auto options = F::SdpaOptions().is_causal(inv.settings.boolean("is_causal"));
        if (inv.settings.has("scale")) options.scale(inv.settings.real("scale"));
        const Tensor q = inv.input("query"), k = inv.input("key"), v = inv.input("value"),
                     mask = inv.input("attn_mask");
        return [=] {
          F::AttentionResult r = F::scaled_dot_product_attention(q, k, v, mask, options);
          return Outputs{{"output", r.output}, {"attn_weights", r.attn_weights}};
        };
      },
  };
}

OpSpec position_encoding() {
  return {
      "position_encoding",
      "DETR PositionEmbeddingSine (num_pos_feats = C/2), no padding mask",
      {},
      false,
      {{"size", SettingType::shape, "", "output size N,C,H,W (C a multiple of 4)"},
       {"temperature", SettingType::real, "10000", "frequency base"},
       {"normalize", SettingType::boolean, "true", "scale the running counts to (0, scale]"},
       {"scale",
        SettingType::real,
        "",
        "normaliser range (default 2*pi; needs normalize)",
        {},
        true}},
      {{"output", "[N,C,H,W]"}},
      [](const Invocation& inv) -> Computation {
        const auto& s = inv.settings;
        auto options = F::PositionEncodingOptions()
                           .temperature(s.real("temperature"))
                           .normalize(s.boolean("normalize"));
        if (s.has("scale")) options.scale(s.real("scale"));
        const Shape size = s.shape("size");
        return [=] { return Outputs{{"output", F::position_encoding_sine(size, options)}}; };
      },
  };
}

}  // namespace cvattn::cli::ops
