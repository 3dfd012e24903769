#include "core/expr.h"

#include <muParser.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
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
// Python's bitwise operators, on whole numbers (python_to_muparser writes them as these calls).
long long whole(mu::value_type a, const char* op) {
  if (a != std::floor(a) || std::fabs(a) > 9007199254740992.0)
    throw mu::ParserError(std::string("'") + op + "' of a number that is not whole");
  return static_cast<long long>(a);
}
mu::value_type bit_and(mu::value_type a, mu::value_type b) { return double(whole(a, "&") & whole(b, "&")); }
mu::value_type bit_or(mu::value_type a, mu::value_type b) { return double(whole(a, "|") | whole(b, "|")); }
mu::value_type shift_left(mu::value_type a, mu::value_type b) {
  const long long n = whole(b, "<<");
  if (n < 0 || n > 62) throw mu::ParserError("'<<' by a count outside 0..62");
  return double(whole(a, "<<") * (1LL << n));
}
mu::value_type shift_right(mu::value_type a, mu::value_type b) {
  const long long n = whole(b, ">>");
  if (n < 0) throw mu::ParserError("'>>' by a negative count");
  return n > 62 ? (whole(a, ">>") < 0 ? -1.0 : 0.0) : double(whole(a, ">>") >> n);
}
mu::value_type ceil_of(mu::value_type a) { return std::ceil(a); }

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

} // namespace

namespace {

// Python's expression grammar (the part a restriction uses), translated into a fully parenthesised
// muparser expression, so that each operator binds as Python binds it whatever muparser's own
// precedence: `not` below the comparisons (muparser's `!` binds tightest, so "not x == 1" read as
// "(!x) == 1"), comparisons chained ("32 <= a * b <= 1024" is "32 <= a * b and a * b <= 1024";
// muparser read "(32 <= a * b) <= 1024", always true), `in` / `not in` a list, `x if c else y`,
// and the bitwise operators (on whole numbers) as functions. muparser's own forms (&&, ||, !, ^ as
// power, c ? a : b) keep their meaning. Loosest first: ternary, or, and, not, comparison, |, &,
// shifts, + -, * / // %, unary - + ! ~, ** ^, atoms.
class PyTranslator {
 public:
  explicit PyTranslator(const std::string& text) : text_(text) { tokenize(); }

  std::string translate() {
    std::string out = ternary();
    if (pos_ < toks_.size()) fail("unexpected '" + toks_[pos_].text + "'");
    return out;
  }

 private:
  struct Tok {
    enum Kind { name, number, op } kind;
    std::string text;
  };
  const std::string& text_;
  std::vector<Tok> toks_;
  size_t pos_ = 0;

  [[noreturn]] static void fail(const std::string& what) { throw UsageError(what); }

  void tokenize() {
    static const char* ops[] = {"**", "//", "<=", ">=", "==", "!=", "&&", "||", "<<", ">>", "<", ">", "+", "-", "*",
                                "/",  "%",  "^",  "!",  "~",  "&",  "|",  "?",  ":",  "(",  ")", ",", "[", "]"};
    for (size_t i = 0; i < text_.size();) {
      const char c = text_[i];
      if (std::isspace(static_cast<unsigned char>(c))) {
        ++i;
        continue;
      }
      if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i + 1 < text_.size() && std::isdigit(static_cast<unsigned char>(text_[i + 1])))) {
        size_t j = i;
        if (c == '0' && j + 1 < text_.size() && (text_[j + 1] == 'x' || text_[j + 1] == 'X')) { // hex, as Python
          j += 2;
          while (j < text_.size() && std::isxdigit(static_cast<unsigned char>(text_[j]))) ++j;
          if (j == i + 2) fail("'" + text_.substr(i, 2) + "' is not a number");
          toks_.push_back({Tok::number, std::to_string(std::stoll(text_.substr(i + 2, j - i - 2), nullptr, 16))});
          i = j;
          continue;
        }
        while (j < text_.size() && (std::isdigit(static_cast<unsigned char>(text_[j])) || text_[j] == '.')) ++j;
        if (j < text_.size() && (text_[j] == 'e' || text_[j] == 'E')) {
          size_t k = j + 1;
          if (k < text_.size() && (text_[k] == '+' || text_[k] == '-')) ++k;
          if (k < text_.size() && std::isdigit(static_cast<unsigned char>(text_[k]))) {
            j = k;
            while (j < text_.size() && std::isdigit(static_cast<unsigned char>(text_[j]))) ++j;
          }
        }
        toks_.push_back({Tok::number, text_.substr(i, j - i)});
        i = j;
        continue;
      }
      if (word_char(c)) {
        size_t j = i;
        while (j < text_.size() && word_char(text_[j])) ++j;
        toks_.push_back({Tok::name, text_.substr(i, j - i)});
        i = j;
        continue;
      }
      bool matched = false;
      for (const char* o : ops)
        if (text_.compare(i, std::strlen(o), o) == 0) {
          toks_.push_back({Tok::op, o});
          i += std::strlen(o);
          matched = true;
          break;
        }
      if (!matched) {
        if (c == '=') fail("'=' at position " + std::to_string(i) + ": a comparison is '=='");
        if (c == '"' || c == '\'') fail("strings are not expressions here (position " + std::to_string(i) + ")");
        fail("unexpected '" + std::string(1, c) + "' at position " + std::to_string(i));
      }
    }
  }

  bool at(const char* t, size_t ahead = 0) const {
    return pos_ + ahead < toks_.size() && toks_[pos_ + ahead].kind != Tok::number && toks_[pos_ + ahead].text == t;
  }
  bool take(const char* t) {
    if (!at(t)) return false;
    ++pos_;
    return true;
  }
  void expect(const char* t, const std::string& after) {
    if (take(t)) return;
    fail("expected '" + std::string(t) + "' " + after + (pos_ < toks_.size() ? ", got '" + toks_[pos_].text + "'" : ", got the end"));
  }

  std::string ternary() {
    std::string a = logical_or();
    if (take("?")) { // muparser's c ? a : b
      std::string x = ternary();
      expect(":", "in c ? a : b");
      return "(" + a + " ? " + x + " : " + ternary() + ")";
    }
    if (take("if")) { // Python's a if c else b
      std::string c = logical_or();
      expect("else", "in a if c else b");
      return "(" + c + " ? " + a + " : " + ternary() + ")";
    }
    return a;
  }
  std::string logical_or() {
    std::string a = logical_and();
    // Short-circuit, as Python's: the right side is not evaluated where the left decides, so a
    // guard keeps a division by zero from failing ("W == 0 or H % W == 0"). muparser's ?: is lazy.
    while (take("or") || take("||")) a = "(" + a + " ? 1 : ((" + logical_and() + ") != 0))";
    return a;
  }
  std::string logical_and() {
    std::string a = logical_not();
    while (take("and") || take("&&")) a = "(" + a + " ? ((" + logical_not() + ") != 0) : 0)";
    return a;
  }
  std::string logical_not() {
    if (take("not")) return "(!" + logical_not() + ")";
    return comparison();
  }
  // A chain a op1 b op2 c ... is (a op1 b) and (b op2 c) and ...; `in` tests membership of a list.
  std::string comparison() {
    std::string left = bit_or(), out;
    for (;;) {
      std::string op;
      if (at("<") || at("<=") || at(">") || at(">=") || at("==") || at("!=")) {
        op = toks_[pos_++].text;
      } else if (at("in")) {
        ++pos_, op = "in";
      } else if (at("not") && at("in", 1)) {
        pos_ += 2, op = "not in";
      } else {
        break;
      }
      std::string term;
      if (op == "in" || op == "not in") {
        const std::vector<std::string> items = list_items(op);
        const std::string cmp = op == "in" ? " == " : " != ", join = op == "in" ? " || " : " && ";
        for (const auto& x : items) term += (term.empty() ? "" : join) + "(" + left + cmp + x + ")";
        term = "(" + term + ")";
        left = term; // what a further link of the chain compares (rare after `in`)
      } else {
        const std::string right = bit_or();
        term = "(" + left + " " + op + " " + right + ")";
        left = right;
      }
      out = out.empty() ? term : "(" + out + " && " + term + ")";
    }
    return out.empty() ? left : out;
  }
  std::vector<std::string> list_items(const std::string& op) {
    const char* close = take("[") ? "]" : take("(") ? ")" : nullptr;
    if (!close) fail("'" + op + "' needs a list of values: x " + op + " [32, 64, 128]");
    std::vector<std::string> items;
    if (!at(close))
      do items.push_back(ternary());
      while (take(",") && !at(close));
    expect(close, "after the list of '" + op + "'");
    if (items.empty()) fail("'" + op + "' an empty list");
    return items;
  }
  std::string bit_or() {
    std::string a = bit_and();
    while (take("|")) a = "ktune_bit_or(" + a + ", " + bit_and() + ")";
    return a;
  }
  std::string bit_and() {
    std::string a = shift();
    while (take("&")) a = "ktune_bit_and(" + a + ", " + shift() + ")";
    return a;
  }
  std::string shift() {
    std::string a = sum();
    for (;;) {
      if (take("<<")) a = "ktune_shl(" + a + ", " + sum() + ")";
      else if (take(">>")) a = "ktune_shr(" + a + ", " + sum() + ")";
      else return a;
    }
  }
  std::string sum() {
    std::string a = term();
    while (at("+") || at("-")) {
      const std::string op = toks_[pos_++].text;
      a = "(" + a + " " + op + " " + term() + ")";
    }
    return a;
  }
  std::string term() {
    std::string a = unary();
    while (at("*") || at("/") || at("//") || at("%")) {
      const std::string op = toks_[pos_++].text;
      a = "(" + a + " " + op + " " + unary() + ")";
    }
    return a;
  }
  std::string unary() {
    if (take("-")) return "(-" + unary() + ")";
    if (take("+")) return unary();
    if (take("!")) return "(!" + unary() + ")";
    if (take("~")) return "(-" + unary() + " - 1)"; // Python's ~x of a whole number
    return power();
  }
  std::string power() {
    std::string a = atom();
    if (take("**") || take("^")) return "(" + a + " ^ " + unary() + ")"; // right-associative, as Python's
    return a;
  }
  std::string atom() {
    if (pos_ == toks_.size()) fail("the expression ends too early");
    const Tok t = toks_[pos_++];
    if (t.kind == Tok::number) return t.text;
    if (t.kind == Tok::name) {
      if (t.text == "True") return "1";
      if (t.text == "False") return "0";
      static const char* words[] = {"and", "or", "not", "in", "if", "else", "is", "lambda"};
      for (const char* w : words)
        if (t.text == w) fail("'" + t.text + "' where a value belongs");
      if (!take("(")) return t.text;
      std::string call = t.text + "(";
      if (!at(")"))
        do call += (call.back() == '(' ? "" : ", ") + ternary();
        while (take(","));
      expect(")", "after the arguments of " + t.text);
      return call + ")";
    }
    if (t.text == "(") {
      std::string inner = ternary();
      expect(")", "to close '('");
      return "(" + inner + ")";
    }
    fail("unexpected '" + t.text + "'");
  }
};

} // namespace

std::string python_to_muparser(const std::string& text) { return PyTranslator(text).translate(); }

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
  std::string translated;
  try {
    translated = python_to_muparser(text);
  } catch (const UsageError& e) {
    throw UsageError(where + ": '" + text + "': " + e.what());
  }
  try {
    define_operators(m.parser);
    m.parser.DefineFun("ceil_div", ceil_div);
    m.parser.DefineFun("round_up", round_up);
    m.parser.DefineFun("floor", floor_of);
    m.parser.DefineFun("ceil", ceil_of);
    m.parser.DefineFun("ktune_bit_and", bit_and);
    m.parser.DefineFun("ktune_bit_or", bit_or);
    m.parser.DefineFun("ktune_shl", shift_left);
    m.parser.DefineFun("ktune_shr", shift_right);
    // Every name a slot: the ones not read are dropped after parsing (GetUsedVar).
    std::vector<double> all(names.size(), 0.0);
    for (size_t i = 0; i < names.size(); ++i) m.parser.DefineVar(names[i], &all[i]);
    m.parser.SetExpr(translated);
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
    m.parser.SetExpr(translated);
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
    throw NotWholeError(impl_->where + ": '" + impl_->text + "' gives " + buf + " " + context + ", expected a whole number in [" +
                     std::to_string(static_cast<long long>(lo)) + ", " + std::to_string(static_cast<long long>(hi)) + "]");
  }
  return static_cast<long long>(v);
}

} // namespace ktune
