#include "ktune/config.h"

#include <cctype>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "core/json_text.h"
#include "ktune/error.h"

namespace ktune {

namespace {

// Parameter names are a few characters and many share a length and a first letter (BM, BN, WM,
// ...): compared inline, character by character, rather than by a call to memcmp each.
bool same_name(const std::string& k, std::string_view name) {
  if (k.size() != name.size()) return false;
  for (size_t i = 0; i < name.size(); ++i)
    if (k[i] != name[i]) return false;
  return true;
}

} // namespace

int Config::get(std::string_view name) const {
  for (const auto& [k, v] : values_)
    if (same_name(k, name)) return v;
  throw Error("config " + to_json() + " has no parameter '" + std::string(name) + "'");
}

bool Config::has(std::string_view name) const {
  for (const auto& kv : values_)
    if (same_name(kv.first, name)) return true;
  return false;
}

void Config::set(const std::string& name, int value) {
  for (auto& kv : values_)
    if (same_name(kv.first, name)) {
      kv.second = value;
      return;
    }
  values_.emplace_back(name, value);
}

std::string Config::to_json() const {
  std::string s = "{";
  for (size_t i = 0; i < values_.size(); ++i) {
    if (i) s += ",";
    s += nlohmann::json(values_[i].first).dump() + ":" + std::to_string(values_[i].second);
  }
  return s + "}";
}

Config Config::from_json(const std::string& text) {
  // ordered_json keeps the key order of the text: the order is part of the canonical form.
  check_json_depth(text, "config");
  nlohmann::ordered_json j;
  try {
    j = nlohmann::ordered_json::parse(text);
  } catch (const std::exception& e) {
    throw UsageError("config is not valid JSON: " + std::string(e.what()));
  }
  if (!j.is_object()) throw UsageError("config must be a JSON object of integers, got: " + text);
  Config c;
  for (const auto& [k, v] : j.items()) {
    // true / false as 1 / 0: a spec's parameters may be declared so (Kernel Tuner's booleans).
    if (v.is_boolean()) {
      c.values_.emplace_back(k, v.get<bool>() ? 1 : 0);
      continue;
    }
    if (!v.is_number_integer()) throw UsageError("config parameter '" + k + "' must be an integer, got " + v.dump());
    c.values_.emplace_back(k, v.get<int>());
  }
  return c;
}

std::string Config::short_string() const {
  std::string s;
  for (const auto& [k, v] : values_) {
    if (!s.empty()) s += ".";
    // BM128, but RD_WG_SIZE_0_0=16: a name that ends in a digit would run into its value.
    s += k + (!k.empty() && std::isdigit(static_cast<unsigned char>(k.back())) ? "=" : "") + std::to_string(v);
  }
  return s;
}

std::string Config::hash() const { return fnv1a_hex(to_json()); }

std::string fnv1a_hex(const std::string& bytes) {
  uint64_t h = 1469598103934665603ull;
  for (unsigned char ch : bytes) {
    h ^= ch;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

} // namespace ktune
