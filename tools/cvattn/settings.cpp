#include <cerrno>
#include <cstdlib>
#include <limits>

#include "cvattn/core/error.hpp"
#include "op.hpp"

namespace cvattn::cli {
namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  while (true) {
    const std::size_t pos = s.find(sep, start);
    out.push_back(s.substr(start, pos - start));
    if (pos == std::string::npos) break;
    start = pos + 1;
  }
  return out;
}

bool parse_int(const std::string& s, std::int64_t& out) {
  if (s.empty() || s.size() > 20) return false;
  errno = 0;
  char* end = nullptr;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || end != s.c_str() + s.size()) return false;
  out = v;
  return true;
}

}  // namespace

Settings::Settings(const std::string& op, const std::vector<SettingSpec>& specs,
                   std::map<std::string, std::string> given)
    : op_(op), given_(std::move(given)) {
  for (const auto& [key, value] : given_) {
    bool known = false;
    for (const auto& s : specs) known |= s.key == key;
    if (!known) {
      std::string names;
      for (const auto& s : specs) names += (names.empty() ? "" : ", ") + s.key;
      throw ValueError(detail::concat("op '", op, "' has no setting '", key,
                                      "' (settings: ", names.empty() ? "none" : names, ")"));
    }
  }
  for (const auto& s : specs) {
    const auto it = given_.find(s.key);
    if (it != given_.end()) {
      values_[s.key] = it->second;
    } else if (!s.default_value.empty()) {
      values_[s.key] = s.default_value;
    } else if (!s.optional) {
      throw ValueError(detail::concat("op '", op, "' needs --set ", s.key, "=... (", s.help, ")"));
    }
  }
  // Parse every value once now, so that a bad value is an input error before anything runs.
  for (const auto& s : specs) {
    if (!has(s.key)) continue;
    switch (s.type) {
      case SettingType::integer:
        (void)integer(s.key);
        break;
      case SettingType::pair:
        (void)pair(s.key);
        break;
      case SettingType::real:
        (void)real(s.key);
        break;
      case SettingType::boolean:
        (void)boolean(s.key);
        break;
      case SettingType::shape:
        (void)shape(s.key);
        break;
      case SettingType::int_list:
        (void)int_list(s.key);
        break;
      case SettingType::word: {
        const std::string w = word(s.key);
        bool ok = s.words.empty();
        std::string allowed;
        for (const auto& a : s.words) {
          ok |= a == w;
          allowed += (allowed.empty() ? "" : ", ") + a;
        }
        CVATTN_CHECK(ok, ValueError, "op '", op, "': setting ", s.key, "='", w, "' is not one of ",
                     allowed);
        break;
      }
    }
  }
}

bool Settings::has(const std::string& key) const { return values_.count(key) != 0; }
bool Settings::given(const std::string& key) const { return given_.count(key) != 0; }

const std::string& Settings::raw(const std::string& key) const {
  const auto it = values_.find(key);
  if (it == values_.end()) {
    throw std::logic_error("cvattn tool: op '" + op_ + "' read undeclared setting '" + key + "'");
  }
  return it->second;
}

std::int64_t Settings::integer(const std::string& key) const {
  std::int64_t v;
  CVATTN_CHECK(parse_int(raw(key), v), ValueError, "op '", op_, "': setting ", key, "='", raw(key),
               "' is not an integer");
  return v;
}

Pair2 Settings::pair(const std::string& key) const {
  const auto parts = split(raw(key), ',');
  std::int64_t a, b;
  if (parts.size() == 1 && parse_int(parts[0], a)) return Pair2(a);
  if (parts.size() == 2 && parse_int(parts[0], a) && parse_int(parts[1], b)) return Pair2(a, b);
  throw ValueError(detail::concat("op '", op_, "': setting ", key, "='", raw(key),
                                  "' is not an integer or an integer pair h,w"));
}

double Settings::real(const std::string& key) const {
  const std::string& s = raw(key);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  CVATTN_CHECK(!s.empty() && errno == 0 && end == s.c_str() + s.size(), ValueError, "op '", op_,
               "': setting ", key, "='", s, "' is not a number");
  return v;
}

bool Settings::boolean(const std::string& key) const {
  const std::string& s = raw(key);
  if (s == "true" || s == "1" || s == "True") return true;
  if (s == "false" || s == "0" || s == "False") return false;
  throw ValueError(detail::concat("op '", op_, "': setting ", key, "='", s,
                                  "' is not a boolean (true/false/1/0)"));
}

std::string Settings::word(const std::string& key) const { return raw(key); }

Shape Settings::shape(const std::string& key) const {
  Shape out;
  for (const auto& p : split(raw(key), ',')) {
    std::int64_t v;
    CVATTN_CHECK(parse_int(p, v) && v >= 0, ValueError, "op '", op_, "': setting ", key, "='",
                 raw(key), "' is not a shape of non-negative integers such as 1,3,32,32");
    out.push_back(v);
  }
  return out;
}

std::vector<std::int64_t> Settings::int_list(const std::string& key) const {
  std::vector<std::int64_t> out;
  for (const auto& p : split(raw(key), ',')) {
    std::int64_t v;
    CVATTN_CHECK(parse_int(p, v), ValueError, "op '", op_, "': setting ", key, "='", raw(key),
                 "' is not a list of integers such as 3,5");
    out.push_back(v);
  }
  return out;
}

Tensor Invocation::input(const std::string& name) const {
  const auto it = inputs.find(name);
  return it == inputs.end() ? Tensor() : it->second;
}

}  // namespace cvattn::cli
