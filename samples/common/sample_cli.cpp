#include "sample_cli.hpp"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <opencv2/imgcodecs.hpp>
#include <set>
#include <sstream>
#include <stdexcept>
#include <system_error>

#ifndef CVATTN_ASSETS_DIR
#define CVATTN_ASSETS_DIR ""
#endif

namespace sample {

namespace {

std::string trim(const std::string& s) {
  const auto b = s.find_first_not_of(" \t\r\n");
  if (b == std::string::npos) return "";
  return s.substr(b, s.find_last_not_of(" \t\r\n") - b + 1);
}

std::string& assets_override() {
  static std::string value;
  return value;
}

std::string& program_name() {
  static std::string value = "sample";
  return value;
}

// Levenshtein distance, for "did you mean".
std::size_t distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diag = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] != b[j - 1])});
      diag = up;
    }
  }
  return row[b.size()];
}

std::string dashed(const std::string& name) { return (name.size() == 1 ? "-" : "--") + name; }

void print_help(const std::vector<Option>& options, const std::string& about) {
  std::cout << about << "\n\nOptions (--name=value; flags without a value):\n";
  std::vector<std::string> heads;
  std::size_t width = 0;
  for (const Option& o : options) {
    std::string head;
    for (const std::string& n : o.names) head += (head.empty() ? "" : ", ") + dashed(n);
    width = std::max(width, head.size());
    heads.push_back(head);
  }
  // Help text wrapped at 100 columns, continuation lines indented under the first.
  const std::size_t indent = width + 4, columns = 100;
  for (std::size_t i = 0; i < options.size(); ++i) {
    const Option& o = options[i];
    std::string text = o.help;
    if (!o.default_value.empty()) text += " (default: " + o.default_value + ")";
    std::string line = "  " + heads[i] + std::string(width - heads[i].size() + 2, ' ');
    std::stringstream words(text);
    bool first = true;
    for (std::string word; words >> word;) {
      if (!first && line.size() + 1 + word.size() > columns) {
        std::cout << line << "\n";
        line = std::string(indent, ' ') + word;
      } else {
        line += (first ? "" : " ") + word;
      }
      first = false;
    }
    std::cout << line << "\n";
  }
}

}  // namespace

std::vector<Option> parse_keys(const std::string& keys) {
  std::vector<Option> out;
  std::size_t at = 0;
  while ((at = keys.find('{', at)) != std::string::npos) {
    const std::size_t end = keys.find('}', at);
    if (end == std::string::npos) throw std::invalid_argument("unterminated key in " + keys);
    const std::string body = keys.substr(at + 1, end - at - 1);
    at = end + 1;
    const std::size_t bar1 = body.find('|');
    const std::size_t bar2 = bar1 == std::string::npos ? bar1 : body.find('|', bar1 + 1);
    if (bar2 == std::string::npos) throw std::invalid_argument("malformed key {" + body + "}");
    Option o;
    std::stringstream names(body.substr(0, bar1));
    for (std::string n; names >> n;) o.names.push_back(n);
    o.default_value = trim(body.substr(bar1 + 1, bar2 - bar1 - 1));
    o.help = trim(body.substr(bar2 + 1));
    if (o.names.empty()) throw std::invalid_argument("key without a name {" + body + "}");
    out.push_back(o);
  }
  return out;
}

std::string assets_key() {
  return "{assets   |  | the bundled assets folder; default: the installed share/cvattn next to "
         "the program, else the source tree's assets/ }";
}

std::string batch_keys() {
  return "{list     |  | file with one input per line (instead of or besides --input) }"
         "{shard    |  | I/N: process only shard I of N of the sorted inputs (0 <= I < N) }";
}

std::optional<int> check_command_line(int argc, const char* const* argv, const std::string& keys,
                                      const std::string& about) {
  if (argc > 0 && argv[0]) program_name() = fs::path(argv[0]).filename().string();
  const std::string& program = program_name();
  const std::vector<Option> options = parse_keys(keys);
  bool help = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-' || arg == "--") {
      std::cerr << program << ": error: unexpected argument '" << arg
                << "' (options take the form --name=value; see --help)\n";
      return 2;
    }
    const std::size_t dashes = arg[1] == '-' ? 2 : 1;
    const std::size_t eq = arg.find('=');
    const std::string name = arg.substr(dashes, eq == std::string::npos ? eq : eq - dashes);
    const Option* found = nullptr;
    for (const Option& o : options) {
      if (std::find(o.names.begin(), o.names.end(), name) != o.names.end()) found = &o;
    }
    if (!found) {
      std::string best;
      std::size_t best_distance = 3;  // suggest only near misses
      for (const Option& o : options) {
        for (const std::string& n : o.names) {
          const std::size_t d = distance(name, n);
          if (n.size() > 1 && d < best_distance) best_distance = d, best = n;
        }
      }
      std::cerr << program << ": error: unknown option '" << arg.substr(0, eq) << "'"
                << (best.empty() ? "" : " (did you mean --" + best + "?)") << "; see --help\n";
      return 2;
    }
    if (found->names.front() == "help") help = true;
    if (found->names.front() == "assets" && eq != std::string::npos) {
      assets_override() = arg.substr(eq + 1);
      if (!fs::is_directory(assets_override())) {
        std::cerr << program << ": error: --assets: no such folder: " << assets_override() << "\n";
        return 2;
      }
    }
  }
  if (help) {
    print_help(options, about);
    try {
      std::cout << "\nAssets: " << assets_dir().string() << "\n";
    } catch (const std::runtime_error& e) {
      std::cout << "\nAssets: " << e.what() << "\n";
    }
    return 0;
  }
  return std::nullopt;
}

int value_errors(const cv::CommandLineParser& parser, const char* program) {
  std::cerr << program << ": error: bad option value (see --help)\n";
  parser.printErrors();
  return 2;
}

fs::path assets_dir() {
  std::vector<fs::path> tried;
  if (!assets_override().empty()) {
    const fs::path given = assets_override();
    if (fs::is_directory(given)) return given;
    throw std::runtime_error("--assets: no such folder: " + given.string());
  }
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path installed = exe.parent_path().parent_path() / "share" / "cvattn";
    if (fs::is_directory(installed / "weights")) return installed;
    tried.push_back(installed);
  }
  const fs::path source = CVATTN_ASSETS_DIR;
  if (!source.empty() && fs::is_directory(source)) return source;
  if (!source.empty()) tried.push_back(source);
  std::string list;
  for (const fs::path& p : tried) list += (list.empty() ? "" : ", ") + p.string();
  throw std::runtime_error("cannot find the bundled assets (tried " + list +
                           "); pass --assets=FOLDER");
}

fs::path find_asset(const std::string& path) {
  if (path.empty() || fs::exists(path)) return path;
  const fs::path p(path);
  if (p.is_absolute()) return p;
  try {
    const fs::path bundled = assets_dir() / p;
    return fs::exists(bundled) ? bundled : p;
  } catch (const std::runtime_error&) {
    return p;  // no assets folder: the caller reports the missing file as given
  }
}

std::string count(std::size_t n, const std::string& singular, const std::string& plural) {
  return std::to_string(n) + " " + (n == 1 ? singular : (plural.empty() ? singular + "s" : plural));
}

Shard parse_shard(const std::string& text) {
  if (text.empty()) return {};
  const std::size_t slash = text.find('/');
  auto number = [&](const std::string& s) -> long long {
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(s, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    const bool digits = !s.empty() && std::all_of(s.begin(), s.end(),
                                                  [](char ch) { return ch >= '0' && ch <= '9'; });
    if (!digits || used != s.size()) {
      throw std::runtime_error("--shard=" + text + ": expected I/N with 0 <= I < N");
    }
    return v;
  };
  if (slash == std::string::npos) {
    throw std::runtime_error("--shard=" + text + ": expected I/N with 0 <= I < N");
  }
  const long long i = number(text.substr(0, slash)), n = number(text.substr(slash + 1));
  if (n < 1 || i >= n) throw std::runtime_error("--shard=" + text + ": expected 0 <= I < N");
  return {static_cast<std::size_t>(i), static_cast<std::size_t>(n)};
}

std::vector<fs::path> shard_of(std::vector<fs::path> inputs, Shard s) {
  std::sort(inputs.begin(), inputs.end());
  inputs.erase(std::unique(inputs.begin(), inputs.end()), inputs.end());
  std::vector<fs::path> mine;
  for (std::size_t k = s.index; k < inputs.size(); k += s.count) mine.push_back(inputs[k]);
  return mine;
}

std::vector<fs::path> read_list(const fs::path& list) {
  std::ifstream in(list);
  if (!in) throw std::runtime_error("--list: cannot read " + list.string());
  std::vector<fs::path> out;
  for (std::string line; std::getline(in, line);) {
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    out.emplace_back(line);
  }
  return out;
}

std::vector<fs::path> select_inputs(const std::string& input, const std::string& list,
                                    const std::string& shard) {
  const Shard s = parse_shard(shard);
  std::vector<fs::path> given;
  std::stringstream items(input);
  for (std::string item; std::getline(items, item, ',');) {
    if (!item.empty()) given.push_back(find_asset(item));
  }
  if (!list.empty()) {
    const std::vector<fs::path> lines = read_list(list);
    given.insert(given.end(), lines.begin(), lines.end());
  }
  std::vector<fs::path> files;
  for (const fs::path& path : given) {
    if (fs::is_directory(path)) {
      for (const auto& e : fs::directory_iterator(path)) {
        // haveImageReader looks at the file's signature, so JSON and text files are skipped.
        if (e.is_regular_file() && cv::haveImageReader(e.path().string())) {
          files.push_back(e.path());
        }
      }
    } else if (fs::is_regular_file(path)) {
      files.push_back(path);
    } else {
      throw std::runtime_error("no such file or folder: " + path.string());
    }
  }
  if (files.empty()) {
    throw std::runtime_error("no images found in '" + input + "'" +
                             (list.empty() ? "" : " and --list=" + list));
  }
  return shard_of(std::move(files), s);
}

}  // namespace sample
