#pragma once
// StateDict: an ordered map from PyTorch state_dict key to Tensor, as read from a
// .safetensors file. Integer tensors (e.g. BatchNorm's num_batches_tracked) are kept, converted to
// float, and flagged so that a module accepts them only where it has such a buffer.
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

}  // namespace cvattn
