#include "args.h"

#include "loom/core/str_cat.h"

namespace loom::cli {

std::optional<std::string> Args::take_option(std::string_view name) {
  std::optional<std::string> value;
  for (size_t i = 0; i < args_.size();) {
    const std::string& a = args_[i];
    if (a == "--") break;
    if (a == name) {
      if (i + 1 >= args_.size()) throw UsageError(str_cat("option ", name, " needs a value"));
      value = args_[i + 1];
      args_.erase(args_.begin() + i, args_.begin() + i + 2);
    } else if (a.size() > name.size() && a.starts_with(name) && a[name.size()] == '=') {
      value = a.substr(name.size() + 1);
      args_.erase(args_.begin() + i);
    } else {
      ++i;
    }
  }
  return value;
}

bool Args::take_flag(std::string_view name) {
  bool found = false;
  for (size_t i = 0; i < args_.size();) {
    if (args_[i] == "--") break;
    if (args_[i] == name) {
      args_.erase(args_.begin() + i);
      found = true;
    } else {
      ++i;
    }
  }
  return found;
}

std::vector<std::string> Args::positionals(size_t min, size_t max) {
  std::vector<std::string> out;
  bool only_positionals = false;
  for (const std::string& a : args_) {
    if (!only_positionals && a == "--") {
      only_positionals = true;
      continue;
    }
    // A lone "-" and negative-looking schema text are positionals; "--x" and "-x" are options.
    if (!only_positionals && a.size() > 1 && a[0] == '-' && a.find_first_of(" (") == a.npos) {
      throw UsageError(str_cat("unknown option '", a, "'"));
    }
    out.push_back(a);
  }
  if (out.size() < min || out.size() > max) {
    if (min == max) {
      throw UsageError(
          str_cat("expected ", min, " argument", min == 1 ? "" : "s", ", got ", out.size()));
    }
    throw UsageError(str_cat("expected ", min, " to ", max, " arguments, got ", out.size()));
  }
  return out;
}

}  // namespace loom::cli
