// Expressions of a kernel spec (constraints, launch geometry, buffer sizes, scalars, FLOP
// counts): parsed and evaluated by muparser, over a fixed list of names (the spec's parameters,
// dimensions and device limits). Kernel Tuner's restriction syntax (Python's operators and their
// precedence, python_to_muparser below) is accepted beside muparser's own (&&, ||, !, ^, ?:); % and
// // follow Python (floor division and its remainder), and ceil_div, floor, ceil, round_up are added.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ktune/error.h"

namespace ktune {

// Expr::eval_integer's error: a value that is no whole number, or outside its range, at the
// values given (a spec's mistake at that problem, which another problem need not share).
class NotWholeError : public UsageError {
 public:
  using UsageError::UsageError;
};

class Expr {
 public:
  Expr() = default;
  // Parses text over `names`; throws UsageError "<where>: <what is wrong>" on a syntax error or
  // a name not in `names`.
  Expr(const std::string& text, const std::vector<std::string>& names, const std::string& where);

  bool empty() const { return !impl_; }
  const std::string& text() const;
  const std::string& where() const;
  // Indices into the names it was parsed over, of the names it reads.
  const std::vector<size_t>& reads() const;
  bool constant() const { return reads().empty(); }
  // The value with names[i] = values[i]. Thread-safe. Throws UsageError "<where>: ..." for a
  // division by zero or a value that is not finite.
  double eval(const std::vector<double>& values) const;
  // eval() that must give a whole number in [lo, hi]; `context` names it in the message
  // (NotWholeError where it is not).
  long long eval_integer(const std::vector<double>& values, double lo, double hi, const std::string& context) const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

// A Kernel Tuner (Python) expression as a fully parenthesised muparser one, each operator bound
// as Python binds it: and / or / not (not below the comparisons), chained comparisons, in / not
// in a list, x if c else y, ** (and muparser's ^) as power, the bitwise & | << >> ~ on whole
// numbers, True / False; muparser's &&, ||, ! and c ? a : b as they are. Throws UsageError on a
// syntax error. Exposed for tests.
std::string python_to_muparser(const std::string& text);

} // namespace ktune
