#include "core/expr.h"

#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <mutex>

#include "ktune/error.h"

namespace ktune {
namespace {

mu::value_type floor_div(mu::value_type a, mu::value_type b) {
  if (b == 0) throw mu::ParserError("division by zero");
  return std::floor(a / b);
}
mu::value_type py_mod(mu::value_type a, mu::value_type b) {
  if (b == 0) throw mu::ParserError("modulo by zero");
  return a - b * std::floor(a / b);
}
mu::value_type ceil_div(mu::value_type a, mu::value_type b) {
  if (b == 0) throw mu::ParserError("division by zero in ceil_div");
  return std::ceil(a / b);
}
mu::value_type round_up(mu::value_type a, mu::value_type b) {
  if (b == 0) throw mu::ParserError("division by zero in round_up");
  return std::ceil(a / b) * b;
}
mu::value_type divide(mu::value_type a, mu::value_type b) {
  if (b == 0) throw mu::ParserError("division by zero");
  return a / b;
}
mu::value_type add(mu::value_type a, mu::value_type b) { return a + b; }
mu::value_type subtract(mu::value_type a, mu::value_type b) { return a - b; }
mu::value_type multiply(mu::value_type a, mu::value_type b) { return a * b; }
mu::value_type power(mu::value_type a, mu::value_type b) { return std::pow(a, b); }
mu::value_type less(mu::value_type a, mu::value_type b) { return a < b; }
mu::value_type less_eq(mu::value_type a, mu::value_type b) { return a <= b; }
mu::value_type greater(mu::value_type a, mu::value_type b) { return a > b; }
mu::value_type greater_eq(mu::value_type a, mu::value_type b) { return a >= b; }
mu::value_type equal(mu::value_type a, mu::value_type b) { return a == b; }
mu::value_type not_equal(mu::value_type a, mu::value_type b) { return a != b; }
mu::value_type logical_and(mu::value_type a, mu::value_type b) { return a != 0 && b != 0; }
mu::value_type logical_or(mu::value_type a, mu::value_type b) { return a != 0 || b != 0; }
mu::value_type logical_not(mu::value_type a) { return a == 0; }

// muparser's own binary operators, but for a division that refuses a zero divisor (muparser's
// gives inf, and "B / 0 > 1" would then be a valid constraint): they are defined again, all of them.
void define_operators(mu::Parser& p) {
  p.EnableBuiltInOprt(false);
  p.DefineOprt("+", add, mu::prADD_SUB);
  p.DefineOprt("-", subtract, mu::prADD_SUB);
  p.DefineOprt("*", multiply, mu::prMUL_DIV);
  p.DefineOprt("/", divide, mu::prMUL_DIV);
  p.DefineOprt("//", floor_div, mu::prMUL_DIV);
  p.DefineOprt("%", py_mod, mu::prMUL_DIV);
  p.DefineOprt("^", power, mu::prPOW, mu::oaRIGHT);
  p.DefineOprt("<", less, mu::prCMP);
  p.DefineOprt("<=", less_eq, mu::prCMP);
  p.DefineOprt(">", greater, mu::prCMP);
  p.DefineOprt(">=", greater_eq, mu::prCMP);
  p.DefineOprt("==", equal, mu::prCMP);
  p.DefineOprt("!=", not_equal, mu::prCMP);
  p.DefineOprt("&&", logical_and, mu::prLAND);
  p.DefineOprt("||", logical_or, mu::prLOR);
  p.DefineInfixOprt("!", logical_not);
}
mu::value_type floor_of(mu::value_type a) { return std::floor(a); }
mu::value_type ceil_of(mu::value_type a) { return std::ceil(a); }

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

} // namespace

std::string python_to_muparser(const std::string& text) {
  std::string out;
  for (size_t i = 0; i < text.size();) {
    if (text.compare(i, 2, "**") == 0) {
      out += '^', i += 2;
      continue;
    }
    if (!word_char(text[i])) {
      out += text[i++];
      continue;
    }
    size_t j = i;
    while (j < text.size() && word_char(text[j])) ++j;
    const std::string w = text.substr(i, j - i);
    out += w == "and" ? "&&" : w == "or" ? "||" : w == "not" ? "!" : w == "True" ? "1" : w == "False" ? "0" : w;
    i = j;
  }
  return out;
}

struct Expr::Impl {
  std::string text, where;
  std::vector<size_t> reads;
  std::vector<double> slots; // one per name read, in reads order: muparser holds their addresses
  mu::Parser parser;
  std::mutex mu; // a muparser Parser evaluates one call at a time
};

Expr::Expr(const std::string& text, const std::vector<std::string>& names, const std::string& where)
    : impl_(std::make_shared<Impl>()) {
  Impl& m = *impl_;
  m.text = text, m.where = where;
  if (text.find_first_not_of(" \t\n") == std::string::npos) throw UsageError(where + ": empty expression");
  try {
    define_operators(m.parser);
    m.parser.DefineFun("ceil_div", ceil_div);
    m.parser.DefineFun("round_up", round_up);
    m.parser.DefineFun("floor", floor_of);
    m.parser.DefineFun("ceil", ceil_of);
    // Every name a slot: the ones not read are dropped after parsing (GetUsedVar).
    std::vector<double> all(names.size(), 0.0);
    for (size_t i = 0; i < names.size(); ++i) m.parser.DefineVar(names[i], &all[i]);
    m.parser.SetExpr(python_to_muparser(text));
    const mu::varmap_type used = m.parser.GetUsedVar(); // lists names it does not know too
    for (const auto& [name, ptr] : used)
      if (std::find(names.begin(), names.end(), name) == names.end()) {
        std::string list;
        for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
        throw UsageError(where + ": '" + text + "': unknown name '" + name + "' (known: " + list + ")");
      }
    m.slots.assign(used.size(), 0.0);
    m.parser.ClearVar();
    size_t k = 0;
    for (size_t i = 0; i < names.size(); ++i) {
      if (!used.count(names[i])) continue;
      m.reads.push_back(i);
      m.parser.DefineVar(names[i], &m.slots[k++]);
    }
    m.parser.SetExpr(python_to_muparser(text));
  } catch (const mu::ParserError& e) {
    std::string tok = e.GetToken(), msg = e.GetMsg();
    size_t w = 0;
    while (w < tok.size() && word_char(tok[w])) ++w;
    if (w > 0 && !std::isdigit(static_cast<unsigned char>(tok[0]))) {
      tok = tok.substr(0, w);
      bool known = false;
      std::string list;
      for (const auto& n : names) known = known || n == tok, list += (list.empty() ? "" : ", ") + n;
      if (!known) msg = "unknown name '" + tok + "' (known: " + list + ")";
    } else if (e.GetCode() == mu::ecUNASSIGNABLE_TOKEN && !tok.empty()) {
      msg = "unexpected '" + tok.substr(0, 1) + "' at position " + std::to_string(e.GetPos());
    }
    throw UsageError(where + ": '" + text + "': " + msg);
  }
  if (m.reads.empty()) eval({}); // a constant: its division by zero is an error of the spec now
}

const std::string& Expr::text() const { return impl_->text; }
const std::string& Expr::where() const { return impl_->where; }

const std::vector<size_t>& Expr::reads() const {
  static const std::vector<size_t> none;
  return impl_ ? impl_->reads : none;
}

double Expr::eval(const std::vector<double>& values) const {
  Impl& m = *impl_;
  double v = 0;
  {
    std::lock_guard<std::mutex> lk(m.mu);
    for (size_t k = 0; k < m.reads.size(); ++k) m.slots[k] = values.at(m.reads[k]);
    try {
      v = m.parser.Eval();
    } catch (const mu::ParserError& e) {
      throw UsageError(m.where + ": '" + m.text + "': " + e.GetMsg());
    }
  }
  if (!std::isfinite(v)) throw UsageError(m.where + ": '" + m.text + "' is not a finite number (a division by zero?)");
  return v;
}

long long Expr::eval_integer(const std::vector<double>& values, double lo, double hi, const std::string& context) const {
  const double v = eval(values);
  if (v != std::floor(v) || v < lo || v > hi) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    throw UsageError(impl_->where + ": '" + impl_->text + "' gives " + buf + " " + context + ", expected a whole number in [" +
                     std::to_string(static_cast<long long>(lo)) + ", " + std::to_string(static_cast<long long>(hi)) + "]");
  }
  return static_cast<long long>(v);
}

} // namespace ktune
