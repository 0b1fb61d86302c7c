#pragma once
// StateDict: an ordered map from PyTorch state_dict key to Tensor, as read from a
// .safetensors file. Integer tensors (e.g. BatchNorm's num_batches_tracked) are kept, converted to
// float, and flagged so that a module accepts them only where it has such a buffer.
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "cvattn/core/tensor.hpp"
#include "cvattn/export.hpp"

namespace cvattn {

class CVATTN_EXPORT StateDict {
 public:
  struct Entry {
    std::string key;
    Tensor value;
    bool integer = false;  // stored as an integer dtype in the file
  };

  // Inserts or replaces key.
  void set(const std::string& key, Tensor value, bool integer = false);
  [[nodiscard]] bool contains(const std::string& key) const;
  // The tensor under key; ValueError naming the key (and the keys present) when absent.
  [[nodiscard]] const Tensor& at(const std::string& key) const;
  [[nodiscard]] const Entry* find(const std::string& key) const;
  bool erase(const std::string& key);

  [[nodiscard]] const std::vector<Entry>& entries() const noexcept { return entries_; }
  [[nodiscard]] std::size_t size() const noexcept { return entries_.size(); }
  [[nodiscard]] bool empty() const noexcept { return entries_.empty(); }
  [[nodiscard]] std::vector<std::string> keys() const;

  // Keys that start with prefix + '.', with the prefix removed ("fc_loc.0.weight" under
  // "fc_loc" becomes "0.weight").
  [[nodiscard]] StateDict sub(const std::string& prefix) const;
  // True if any key starts with prefix + '.'.
  [[nodiscard]] bool has_prefix(const std::string& prefix) const;

 private:
  std::vector<Entry> entries_;
};

// Rules that rewrite state_dict keys, for checkpoints laid out differently from the module that
// loads them. Each key goes through every rule in order (a rule sees the previous rule's result):
//
//   // timm's Attention (attn.qkv, attn.proj) into MultiheadSelfAttention keys
//   const StateDict renamed = rename_keys(
//       dict, KeyRenames()
//                 .prefix("module.", "")                                   // DataParallel
//                 .regex(R"(\.qkv\.(weight|bias)$)", ".in_proj_$1")
//                 .regex(R"(\.proj\.)", ".out_proj.")
//                 .drop(R"(^head\.)"));
class CVATTN_EXPORT KeyRenames {
 public:
  // A key that starts with `from` has that start replaced by `to` ("module." -> "").
  KeyRenames& prefix(const std::string& from, const std::string& to);
  // std::regex_replace(key, pattern, replacement) on keys the pattern matches anywhere
  // (ECMAScript syntax, "$1" for a group, every match replaced). ValueError on a bad pattern.
  KeyRenames& regex(const std::string& pattern, const std::string& replacement);
  // Keys the pattern matches anywhere are removed.
  KeyRenames& drop(const std::string& pattern);

  // The key after every rule; nullopt when a drop rule removed it.
  [[nodiscard]] std::optional<std::string> apply(const std::string& key) const;
  [[nodiscard]] bool empty() const noexcept { return rules_.empty(); }

  struct Rule;  // defined in state_dict.cpp

 private:
  std::vector<std::shared_ptr<const Rule>> rules_;
};

// dict with every key rewritten by `rules`, in the original order, tensors shared. ValueError
// when two keys end up with the same name (naming both original keys and the result) or a key
// becomes empty.
[[nodiscard]] CVATTN_EXPORT StateDict rename_keys(const StateDict& dict, const KeyRenames& rules);

}  // namespace cvattn
