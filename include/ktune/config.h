// One point of a family's search space: parameter name -> integer value, in the family's
// declared parameter order (so the canonical JSON and the hash are stable).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ktune {

class Config {
 public:
  Config() = default;
  Config(std::initializer_list<std::pair<std::string, int>> values) : values_(values) {}

  // Throws Error naming the parameter when it is not set: a constraint that reads a parameter
  // it did not declare fails loudly instead of seeing a default. By string_view: constraints
  // read parameters by literal names millions of times while a space is enumerated, and a
  // std::string made for each read was a tenth of that time.
  int get(std::string_view name) const;
  int operator[](std::string_view name) const { return get(name); }
  bool has(std::string_view name) const;
  void set(const std::string& name, int value); // replaces or appends
  void pop_back() { values_.pop_back(); }
  size_t size() const { return values_.size(); }
  const std::vector<std::pair<std::string, int>>& items() const { return values_; }

  std::string to_json() const;                       // {"BM":128,"BN":64,...}, no spaces
  static Config from_json(const std::string& json);  // throws UsageError on bad input
  std::string short_string() const;                  // BM128.BN64...
  std::string hash() const;                          // 16 hex digits of FNV-1a over to_json()

  bool operator==(const Config& o) const { return values_ == o.values_; }

 private:
  std::vector<std::pair<std::string, int>> values_;
};

// FNV-1a 64-bit over bytes, as 16 hex digits: the project's one content hash (configs,
// template sources, cache keys). Not cryptographic; collisions are not a threat model here.
std::string fnv1a_hex(const std::string& bytes);

} // namespace ktune
