// ktune report: figures of a database's trials, as one self-contained HTML page plus SVG files.
//
// Every figure is an <svg> whose data-points attribute counts the elements of class "point" it
// draws (markers or bars): the tests check that count against the database, and in a browser
// against the DOM. Text from the database is escaped wherever it lands in HTML or SVG.
#include "tools/report.h"
#include "tools/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cmath>
#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string_view>
#include <vector>

#include "core/json_text.h"
#include "db/store.h"
#include "ktune/error.h"
#include "ktune/gemm_problem.h"

namespace ktune {
namespace {

// ---------------------------------------------------------------- text

std::string esc(std::string_view s) {
  std::string o;
  o.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&#39;"; break;
      default:
        // Control characters have no place in XML 1.0 text; show them as '?'.
        o += (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t') ? '?' : c;
    }
  }
  return o;
}

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// Coordinates in SVG user units, two decimals.
std::string px(double v) { return fmt("%.2f", v); }
std::string num(double v) { return fmt("%.4g", v); }

// Okabe-Ito's seven colours, then Paul Tol's muted set: sixteen, so that every family ktune has
// (eleven GEMM and row families in a full run) keeps one colour of its own in every chart.
const char* const kPalette[] = {"#0072B2", "#E69F00", "#009E73", "#CC79A7", "#56B4E9", "#D55E00", "#F0E442", "#882255",
                                "#44AA99", "#117733", "#332288", "#AA4499", "#999933", "#661100", "#6699CC", "#888888"};
const char* colour(size_t i) { return kPalette[i % (sizeof kPalette / sizeof kPalette[0])]; }

// Seconds since the epoch of "YYYY-MM-DDTHH:MM:SS(.fff)Z" (or a space for the T); nullopt if not.
std::optional<double> parse_utc(const std::string& s) {
  int y, mo, d, h, mi;
  double sec;
  if (std::sscanf(s.c_str(), "%4d-%2d-%2d%*1[T ]%2d:%2d:%lf", &y, &mo, &d, &h, &mi, &sec) != 6) return std::nullopt;
  // Days from the civil date (H. Hinnant's algorithm): no time zone is involved.
  y -= mo <= 2;
  const int era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = unsigned(y - era * 400);
  const unsigned doy = unsigned((153 * (mo + (mo > 2 ? -3 : 9)) + 2) / 5 + d - 1);
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  const double days = double(era) * 146097 + double(doe) - 719468;
  return days * 86400 + h * 3600 + mi * 60 + sec;
}

// ---------------------------------------------------------------- SVG figures

struct Figure {
  std::string id, file, title;
  size_t points = 0;
  int width = 0, height = 0;
  std::string body; // the elements inside <svg>

  std::string open(bool xmlns) const {
    return fmt("<svg%s width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" ", xmlns ? " xmlns=\"http://www.w3.org/2000/svg\"" : "",
               width, height, width, height) +
           "id=\"" + esc(id) + "\" class=\"figure\" data-points=\"" + std::to_string(points) +
           "\" font-family=\"sans-serif\" role=\"img\" aria-label=\"" + esc(title) + "\">";
  }
  std::string standalone() const { return "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n" + open(true) + body + "</svg>\n"; }
  // Inline in HTML the SVG namespace is implied: the page names no URL at all.
  std::string inline_html() const { return open(false) + body + "</svg>"; }
};

std::string text(double x, double y, const std::string& s, const std::string& attrs = "") {
  return "<text x=\"" + px(x) + "\" y=\"" + px(y) + "\"" + (attrs.empty() ? "" : " " + attrs) + ">" + esc(s) + "</text>";
}

std::string shorten(const std::string& s, size_t n) { return s.size() <= n ? s : s.substr(0, n - 1) + "~"; }

// An axis: data range [lo, hi] onto pixels [p0, p1], linear or logarithmic.
struct Scale {
  double lo = 0, hi = 1;
  bool log = false;
  double p0 = 0, p1 = 1;
  double operator()(double v) const {
    if (log && !(v > 0)) v = lo; // nothing of a log axis is at or below 0: drawn at its bottom
    const double t = log ? (std::log10(v) - std::log10(lo)) / (std::log10(hi) - std::log10(lo)) : (v - lo) / (hi - lo);
    return p0 + t * (p1 - p0);
  }
  std::vector<double> ticks() const {
    std::vector<double> t;
    if (log) {
      const int e0 = int(std::floor(std::log10(lo))), e1 = int(std::ceil(std::log10(hi)));
      const bool dense = e1 - e0 <= 3;
      for (int e = e0; e <= e1; ++e)
        for (double m : {1.0, 2.0, 5.0}) {
          if (!dense && m != 1.0) continue;
          const double v = m * std::pow(10.0, e);
          if (v >= lo * (1 - 1e-9) && v <= hi * (1 + 1e-9)) t.push_back(v);
        }
      if (t.size() >= 2) return t;
      t.clear(); // less than a decade: linear ticks read better
    }
    const double raw = (hi - lo) / 5;
    const double mag = std::pow(10.0, std::floor(std::log10(raw)));
    const double r = raw / mag;
    const double step = (r < 1.5 ? 1 : r < 3 ? 2 : r < 7 ? 5 : 10) * mag;
    for (double v = std::ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) t.push_back(std::abs(v) < step * 1e-9 ? 0 : v);
    return t;
  }
};

// The range of values, padded; a log axis spans the positive ones (a user kernel that counts no
// FLOPs records 0 TFLOPS), 1 to 10 where there are none.
std::pair<double, double> padded(const std::vector<double>& v, bool log) {
  double lo = *std::min_element(v.begin(), v.end()), hi = *std::max_element(v.begin(), v.end());
  if (log) {
    lo = INFINITY, hi = 0;
    for (double x : v)
      if (x > 0) lo = std::min(lo, x), hi = std::max(hi, x);
    if (hi == 0) return {1, 10};
    if (lo == hi) return {lo / 2, hi * 2};
    const double f = std::pow(hi / lo, 0.06);
    return {lo / f, hi * f};
  }
  if (lo == hi) {
    const double d = lo == 0 ? 1 : std::abs(lo) * 0.1;
    return {lo - d, hi + d};
  }
  const double d = (hi - lo) * 0.06;
  return {lo - d, hi + d};
}

struct Pt {
  Pt(double x_, double y_, std::string tip_ = "", std::string label_ = "")
      : x(x_), y(y_), tip(std::move(tip_)), label(std::move(label_)) {}
  double x, y;
  std::string tip, label;
};
struct Series {
  std::string name, colour;
  std::vector<Pt> pts;
  bool markers = true, line = true, step = true, dashed = false;
};
struct XYChart {
  std::string id, file, title, subtitle, xlabel, ylabel, empty_note = "no data";
  bool xlog = false, ylog = false;
  std::optional<std::pair<double, double>> xrange, yrange;
  std::vector<Series> series;
  bool label_points = false;
};

constexpr int kW = 830, kH = 430, kLeft = 78, kRight = 560, kTop = 62, kBottom = 362;

std::string frame_text(const std::string& title, const std::string& subtitle, int width, int height) {
  std::string b = fmt("<rect x=\"0\" y=\"0\" width=\"%d\" height=\"%d\" fill=\"#ffffff\"/>", width, height);
  b += text(12, 22, title, "font-size=\"15\" font-weight=\"bold\" fill=\"#222\"");
  if (!subtitle.empty()) b += text(12, 41, subtitle, "font-size=\"11.5\" fill=\"#555\"");
  return b;
}

// Grid, ticks and labels of one axis.
std::string axis(const Scale& s, bool horizontal, double other0, double other1, const std::string& label, int height) {
  std::string b;
  for (double t : s.ticks()) {
    const double p = s(t);
    if (horizontal) {
      b += "<line x1=\"" + px(p) + "\" y1=\"" + px(other0) + "\" x2=\"" + px(p) + "\" y2=\"" + px(other1) +
           "\" stroke=\"#e3e3e3\"/>";
      b += text(p, other1 + 16, num(t), "font-size=\"11\" text-anchor=\"middle\" fill=\"#333\"");
    } else {
      b += "<line x1=\"" + px(other0) + "\" y1=\"" + px(p) + "\" x2=\"" + px(other1) + "\" y2=\"" + px(p) +
           "\" stroke=\"#e3e3e3\"/>";
      b += text(other0 - 6, p + 4, num(t), "font-size=\"11\" text-anchor=\"end\" fill=\"#333\"");
    }
  }
  if (horizontal) b += text((s.p0 + s.p1) / 2, height - 22, label, "font-size=\"12.5\" text-anchor=\"middle\" fill=\"#222\"");
  else
    b += "<text transform=\"translate(18," + px((other0 + other1) / 2) + ") rotate(-90)\" font-size=\"12.5\" " +
         "text-anchor=\"middle\" fill=\"#222\">" + esc(label) + "</text>";
  return b;
}

std::string legend(const std::vector<const Series*>& items, double x, double y) {
  std::string b;
  for (const auto* s : items) {
    b += "<g class=\"legend-item\"><title>" + esc(s->name) + "</title>";
    if (s->line)
      b += "<line x1=\"" + px(x) + "\" y1=\"" + px(y - 4) + "\" x2=\"" + px(x + 22) + "\" y2=\"" + px(y - 4) +
           "\" stroke=\"" + s->colour + "\" stroke-width=\"2\"" + (s->dashed ? " stroke-dasharray=\"5 3\"" : "") + "/>";
    if (s->markers)
      b += "<circle cx=\"" + px(x + 11) + "\" cy=\"" + px(y - 4) + "\" r=\"3.5\" fill=\"" + s->colour + "\"/>";
    b += text(x + 28, y, shorten(s->name, 36), "font-size=\"11\" fill=\"#222\"") + "</g>";
    y += 18;
  }
  return b;
}

Figure render_xy(const XYChart& c) {
  Figure f;
  f.id = c.id, f.file = c.file, f.title = c.title, f.width = kW, f.height = kH;
  f.body = frame_text(c.title, c.subtitle, kW, kH);
  std::vector<double> xs, ys;
  for (const auto& s : c.series)
    for (const auto& p : s.pts) xs.push_back(p.x), ys.push_back(p.y);
  if (xs.empty()) {
    f.body += text(kW / 2.0, kH / 2.0, c.empty_note, "font-size=\"14\" text-anchor=\"middle\" fill=\"#777\"");
    return f;
  }
  const auto xr = c.xrange ? *c.xrange : padded(xs, c.xlog);
  const auto yr = c.yrange ? *c.yrange : padded(ys, c.ylog);
  const Scale sx{xr.first, xr.second, c.xlog, double(kLeft), double(kRight)};
  const Scale sy{yr.first, yr.second, c.ylog, double(kBottom), double(kTop)};
  f.body += axis(sx, true, kTop, kBottom, c.xlabel, kH);
  f.body += axis(sy, false, kLeft, kRight, c.ylabel, kH);
  f.body += fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>", kLeft, kTop,
                kRight - kLeft, kBottom - kTop);
  const std::string clip = c.id + "-clip";
  f.body += "<clipPath id=\"" + esc(clip) + "\">" +
            fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\"/>", kLeft, kTop, kRight - kLeft, kBottom - kTop) +
            "</clipPath><g clip-path=\"url(#" + esc(clip) + ")\">";
  for (const auto& s : c.series) {
    if (!s.line || s.pts.empty()) continue;
    std::string d = "M" + px(sx(s.pts[0].x)) + " " + px(sy(s.pts[0].y));
    for (size_t i = 1; i < s.pts.size(); ++i) {
      if (s.step) d += " H" + px(sx(s.pts[i].x)) + " V" + px(sy(s.pts[i].y));
      else d += " L" + px(sx(s.pts[i].x)) + " " + px(sy(s.pts[i].y));
    }
    f.body += "<path d=\"" + d + "\" fill=\"none\" stroke=\"" + s.colour + "\" stroke-width=\"1.8\"" +
              (s.dashed ? " stroke-dasharray=\"5 3\"" : "") + "><title>" + esc(s.name) + "</title></path>";
  }
  f.body += "</g>";
  for (const auto& s : c.series) {
    if (!s.markers) continue;
    for (const auto& p : s.pts) {
      const double x = sx(p.x), y = sy(p.y);
      f.body += "<circle class=\"point\" cx=\"" + px(x) + "\" cy=\"" + px(y) + "\" r=\"3.6\" fill=\"" + s.colour +
                "\" stroke=\"#fff\" stroke-width=\"0.8\"><title>" + esc(p.tip) + "</title></circle>";
      if (c.label_points && !p.label.empty()) f.body += text(x + 6, y - 6, p.label, "font-size=\"10\" fill=\"#333\"");
      ++f.points;
    }
  }
  std::vector<const Series*> items;
  for (const auto& s : c.series)
    if (!s.name.empty()) items.push_back(&s);
  f.body += legend(items, kRight + 14, kTop + 10);
  return f;
}

struct Bar {
  std::string label, tip, colour;
  double value = 0;
};

// Vertical bars from 0, with an optional reference line (the ratio chart).
Figure render_columns(const std::string& id, const std::string& file, const std::string& title, const std::string& subtitle,
                      const std::string& ylabel, const std::vector<Bar>& bars, double ref, const std::string& ref_label,
                      const std::vector<std::pair<std::string, std::string>>& key) {
  Figure f;
  const int slot = 54, left = 78, top = 62, plot_h = 260;
  const int right = left + std::max(480, slot * int(bars.size()));
  f.id = id, f.file = file, f.title = title, f.width = right + 200, f.height = top + plot_h + 130;
  f.body = frame_text(title, subtitle, f.width, f.height);
  if (bars.empty()) {
    f.body += text(f.width / 2.0, f.height / 2.0, "no problem has both a best config and a cuBLAS time",
                   "font-size=\"14\" text-anchor=\"middle\" fill=\"#777\"");
    return f;
  }
  double hi = ref * 1.25;
  for (const auto& b : bars) hi = std::max(hi, b.value * 1.15);
  const Scale sy{0, hi, false, double(top + plot_h), double(top)};
  for (double t : sy.ticks()) {
    f.body += "<line x1=\"" + px(left) + "\" y1=\"" + px(sy(t)) + "\" x2=\"" + px(right) + "\" y2=\"" + px(sy(t)) +
              "\" stroke=\"#e3e3e3\"/>";
    f.body += text(left - 6, sy(t) + 4, num(t), "font-size=\"11\" text-anchor=\"end\" fill=\"#333\"");
  }
  f.body += "<text transform=\"translate(18," + px(top + plot_h / 2.0) + ") rotate(-90)\" font-size=\"12.5\" " +
            "text-anchor=\"middle\" fill=\"#222\">" + esc(ylabel) + "</text>";
  const double w = double(right - left) / double(bars.size());
  for (size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double x = left + w * double(i) + w * 0.18, bw = w * 0.64;
    f.body += "<rect class=\"point\" x=\"" + px(x) + "\" y=\"" + px(sy(b.value)) + "\" width=\"" + px(bw) +
              "\" height=\"" + px(sy(0) - sy(b.value)) + "\" fill=\"" + b.colour + "\"><title>" + esc(b.tip) +
              "</title></rect>";
    f.body += text(x + bw / 2, sy(b.value) - 4, fmt("%.2f", b.value), "font-size=\"10.5\" text-anchor=\"middle\" fill=\"#222\"");
    const double lx = x + bw / 2, ly = top + plot_h + 12;
    f.body += "<text transform=\"translate(" + px(lx) + "," + px(ly) + ") rotate(-35)\" font-size=\"10.5\" " +
              "text-anchor=\"end\" fill=\"#222\">" + esc(shorten(b.label, 30)) + "<title>" + esc(b.tip) + "</title></text>";
    ++f.points;
  }
  f.body += "<line x1=\"" + px(left) + "\" y1=\"" + px(sy(ref)) + "\" x2=\"" + px(right) + "\" y2=\"" + px(sy(ref)) +
            "\" stroke=\"#222\" stroke-width=\"1.5\" stroke-dasharray=\"6 4\"/>";
  f.body += text(right + 6, sy(ref) + 4, ref_label, "font-size=\"11\" fill=\"#222\"");
  f.body += fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>", left, top, right - left, plot_h);
  double ky = top + 40;
  for (const auto& [name, col] : key) {
    f.body += "<rect x=\"" + px(right + 8) + "\" y=\"" + px(ky - 10) + "\" width=\"12\" height=\"12\" fill=\"" + col + "\"/>";
    f.body += text(right + 26, ky, name, "font-size=\"11\" fill=\"#222\"");
    ky += 18;
  }
  return f;
}

// Horizontal bars on [0, 1] (the importance chart).
Figure render_rows(const std::string& id, const std::string& file, const std::string& title, const std::string& subtitle,
                   const std::string& xlabel, const std::vector<Bar>& bars, const std::string& empty_note) {
  Figure f;
  const int left = 200, right = 640, top = 62, row = 22;
  const int plot_h = std::max(row * int(bars.size()), 60);
  f.id = id, f.file = file, f.title = title, f.width = right + 60, f.height = top + plot_h + 60;
  f.body = frame_text(title, subtitle, f.width, f.height);
  if (bars.empty()) {
    f.body += text(f.width / 2.0, top + 34, empty_note, "font-size=\"13\" text-anchor=\"middle\" fill=\"#777\"");
    return f;
  }
  const Scale sx{0, 1, false, double(left), double(right)};
  for (double t : sx.ticks()) {
    f.body += "<line x1=\"" + px(sx(t)) + "\" y1=\"" + px(top) + "\" x2=\"" + px(sx(t)) + "\" y2=\"" + px(top + plot_h) +
              "\" stroke=\"#e3e3e3\"/>";
    f.body += text(sx(t), top + plot_h + 15, num(t), "font-size=\"11\" text-anchor=\"middle\" fill=\"#333\"");
  }
  f.body += text((left + right) / 2.0, top + plot_h + 38, xlabel, "font-size=\"12.5\" text-anchor=\"middle\" fill=\"#222\"");
  for (size_t i = 0; i < bars.size(); ++i) {
    const auto& b = bars[i];
    const double y = top + row * double(i) + 4;
    // A zero still gets a sliver, so that every row has a visible element.
    const double w = std::max(sx(std::clamp(b.value, 0.0, 1.0)) - left, 1.5);
    f.body += "<rect class=\"point\" x=\"" + px(left) + "\" y=\"" + px(y) + "\" width=\"" + px(w) + "\" height=\"" +
              px(row - 8) + "\" fill=\"" + b.colour + "\"><title>" + esc(b.tip) + "</title></rect>";
    f.body += text(left - 6, y + row - 11, shorten(b.label, 30), "font-size=\"11\" text-anchor=\"end\" fill=\"#222\"");
    f.body += text(left + w + 4, y + row - 11, fmt("%.2f", b.value), "font-size=\"10.5\" fill=\"#333\"");
    ++f.points;
  }
  f.body += fmt("<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" fill=\"none\" stroke=\"#888\"/>", left, top, right - left, plot_h);
  return f;
}

// ---------------------------------------------------------------- the data

// One device's trials of one problem, in recording order.
struct Run {
  int64_t device_id = 0, problem_id = 0;
  std::string device_name, key;
  bool imported = false;
  Problem problem;
  std::vector<const TrialRow*> trials;
  const TrialRow* best = nullptr; // the fastest ok trial
  std::optional<double> cublas_ms;
  std::string label; // short, for axes
};

bool is_ok(const TrialRow& t) { return t.status == TrialStatus::ok && t.median_ms > 0; }

std::string config_short(const std::string& json) {
  try {
    check_json_depth(json, "config");
    const auto j = nlohmann::json::parse(json);
    std::string s;
    for (const auto& [k, v] : j.items()) s += (s.empty() ? "" : " ") + k + "=" + v.dump();
    return s;
  } catch (const std::exception&) {
    return json;
  }
}

struct PeakGuess {
  double tflops;
  std::string basis;
};

// Dense peak of the arch's flagship part, from vendor data sheets: an assumption, said so.
PeakGuess assumed_peak(const std::string& arch, DType d) {
  struct Row {
    const char* arch;
    const char* part;
    double f32, tf32, half, f64; // f64: the vector units' (user kernels), not the tensor cores'
  };
  static const Row rows[] = {{"sm_90", "H100 SXM", 66.9, 494.7, 989.4, 33.5},
                             {"sm_89", "L40S", 91.6, 183.0, 362.1, 1.4},
                             {"sm_86", "A10", 31.2, 62.5, 125.0, 0.98},
                             {"sm_80", "A100 SXM", 19.5, 156.0, 312.0, 9.7}};
  const Row* r = &rows[0];
  bool known = false;
  for (const auto& x : rows)
    if (arch.rfind(x.arch, 0) == 0) r = &x, known = true;
  const double v = d == DType::f32 ? r->f32 : d == DType::tf32 ? r->tf32 : d == DType::f64 ? r->f64 : r->half;
  std::string basis = std::string(r->part) + " dense " + (d == DType::f32 ? "FP32" : d == DType::f64 ? "FP64" : to_string(d)) +
                      " data-sheet peak";
  if (!known) basis += "; " + arch + " is not in ktune's list";
  return {v, basis};
}

constexpr double kAssumedCopyTBs = 3.0;

// Residual degrees of freedom an estimate needs: with fewer, chance dominates.
constexpr double kMinDf = 3;

struct Importance {
  std::string family, param;
  size_t n = 0, k = 0;
  int df = 0; // residual degrees of freedom
  double eta2 = 0, eps2 = 0;
  bool estimable = false;
};

// Per family and parameter: how much of the variance of log(time) grouping the ok trials by the
// parameter's value explains, after removing each run's (device x problem) mean log time.
// eta^2 = SS_between / SS_total; eps^2 = (SS_between - (k-1) * SS_within / df) / SS_total with
// df = n - runs - (k-1), clipped at 0: eta^2 less the share that k groups explain by chance.
std::vector<Importance> importance(const std::vector<Run>& runs) {
  std::map<std::string, std::vector<std::pair<double, const TrialRow*>>> by_family; // residual, trial
  std::map<std::string, std::set<size_t>> runs_of;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    std::map<std::string, std::vector<const TrialRow*>> fam;
    for (const auto* t : runs[ri].trials)
      if (is_ok(*t)) fam[t->family].push_back(t);
    for (const auto& [name, ts] : fam) {
      if (ts.size() < 2) continue; // one trial has no residual to explain
      double mean = 0;
      for (const auto* t : ts) mean += std::log(t->median_ms);
      mean /= double(ts.size());
      for (const auto* t : ts) by_family[name].push_back({std::log(t->median_ms) - mean, t});
      runs_of[name].insert(ri);
    }
  }
  std::vector<Importance> out;
  for (const auto& [family, rs] : by_family) {
    std::map<std::string, std::map<std::string, std::pair<double, size_t>>> groups; // param -> value -> (sum, n)
    std::vector<std::map<std::string, std::string>> values;
    std::set<std::string> params;
    for (const auto& [r, t] : rs) {
      std::map<std::string, std::string> v;
      try {
        const auto j = nlohmann::json::parse(t->config_json); // alive while items() walks it
        for (const auto& [k, x] : j.items()) v[k] = x.dump(), params.insert(k);
      } catch (const std::exception&) {
      }
      values.push_back(std::move(v));
    }
    double ss_t = 0;
    for (const auto& [r, t] : rs) ss_t += r * r;
    const size_t n = rs.size(), nruns = runs_of[family].size();
    for (const auto& p : params) {
      std::map<std::string, std::pair<double, size_t>> g;
      for (size_t i = 0; i < n; ++i) {
        const auto it = values[i].find(p);
        auto& e = g[it == values[i].end() ? "(unset)" : it->second];
        e.first += rs[i].first, e.second += 1;
      }
      Importance imp{family, p, n, g.size()};
      if (imp.k < 2) continue; // constant in these trials: nothing to say
      double ss_b = 0;
      for (const auto& [v, e] : g) ss_b += e.first * e.first / double(e.second);
      const double df = double(n) - double(nruns) - double(imp.k - 1);
      imp.df = std::max(0, int(df));
      if (ss_t > 0) {
        imp.eta2 = std::clamp(ss_b / ss_t, 0.0, 1.0);
        if (df >= kMinDf) {
          imp.estimable = true;
          imp.eps2 = std::clamp((ss_b - double(imp.k - 1) * (ss_t - ss_b) / df) / ss_t, 0.0, 1.0);
        }
      }
      out.push_back(imp);
    }
  }
  return out;
}

// ---------------------------------------------------------------- output

std::string safe_name(const std::string& s) {
  std::string o;
  for (char c : s) o += (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_') ? c : '-';
  return o;
}

void write_file(const std::filesystem::path& path, const std::string& bytes) {
  const std::filesystem::path tmp = path.string() + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary);
    if (!f) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
    f << bytes;
    f.close();
    if (!f) throw Error("cannot write " + tmp.string() + ": " + std::strerror(errno));
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) throw Error("cannot rename " + tmp.string() + " to " + path.string() + ": " + ec.message());
}

const char* const kCss = R"css(
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; color: #222; margin: 24px auto; max-width: 1180px; padding: 0 16px; line-height: 1.45; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { margin-top: 1.8em; border-bottom: 1px solid #ddd; padding-bottom: 0.2em; }
table { border-collapse: collapse; font-size: 0.88em; margin: 0.6em 0; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: #f4f4f4; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code { font-size: 0.92em; background: #f4f4f4; padding: 0 3px; }
figure { display: inline-block; margin: 8px 12px 16px 0; vertical-align: top; max-width: 100%; }
figure.half { width: calc(50% - 14px); margin-right: 10px; }
figure.half svg.figure { width: 100%; }
.scroll { overflow-x: auto; }
figcaption { font-size: 0.85em; color: #555; max-width: 760px; }
svg.figure { border: 1px solid #eee; max-width: 100%; height: auto; }
.note { color: #555; font-size: 0.92em; }
.assumed { color: #a04000; }
)css";

std::string td(const std::string& s, bool numeric = false) {
  return std::string(numeric ? "<td class=\"num\">" : "<td>") + esc(s) + "</td>";
}

std::string figure_html(const Figure& f, const std::string& caption, bool half = false) {
  return std::string(half ? "<figure class=\"half\">" : "<figure>") + f.inline_html() + "<figcaption>" + caption + " <a href=\"" + esc(f.file) + "\">" + esc(f.file) +
         "</a></figcaption></figure>\n";
}

std::string now_utc() {
  const std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

} // namespace

CLI::App* add_report_subcommand(CLI::App& app, ReportOptions& o) {
  auto* rp = app.add_subcommand("report", "Write an HTML report (self-contained) and SVG figures of a database's trials");
  ktune::cli::add_kernel_option(rp, o.kernels);
  rp->add_option("--db", o.db, "Database, opened read-only (default: $KTUNE_DB, else ~/.cache/ktune/ktune.db)");
  rp->add_option("-o,--output", o.out_dir, "Folder for index.html and the figures (created if missing)")->required();
  rp->add_option("--arch", o.arch, "Only this arch (required when the database holds several)");
  rp->add_option("--copy-tb-s", o.copy_tb_s,
                 "Memory roof of the roofline in TB/s, e.g. the copy bandwidth ktune bench prints (default: 3.0, "
                 "marked as assumed)");
  rp->add_option("--peak-tflops", o.peak_tflops,
                 "Compute roof of the roofline in TFLOPS (default: the data-sheet peak of the arch's flagship per "
                 "dtype, marked as assumed)");
  rp->add_option("--note", o.note, "A line shown under the title, e.g. where the database comes from");
  return rp;
}

namespace {

// ---------------------------------------------------------------- the report's sections

// The report's trials: the options checked and the database read before anything is written, so
// that a refused report writes nothing.
struct Loaded {
  std::string path, arch;
  std::vector<TrialRow> rows;
};

Loaded load_trials(const ReportOptions& o) {
  if (o.out_dir.empty()) throw UsageError("--output: a folder for the report is needed, got an empty name");
  if (o.copy_tb_s && !(*o.copy_tb_s > 0 && std::isfinite(*o.copy_tb_s))) throw UsageError("--copy-tb-s must be positive");
  if (o.peak_tflops && !(*o.peak_tflops > 0 && std::isfinite(*o.peak_tflops)))
    throw UsageError("--peak-tflops must be positive");
  Loaded d;
  d.path = o.db.empty() ? default_db_path() : o.db;
  const std::string& path = d.path;
  if (!std::filesystem::exists(path)) throw UsageError("database " + path + " does not exist");
  if (std::filesystem::is_directory(path)) throw UsageError("database " + path + " is a folder, not a file");
  d.arch = o.arch;
  const Store store(path, /*read_only=*/true);
  if (store.schema_version() == 0) throw UsageError(path + " is not a ktune database (no schema)");
  const auto archs = store.trial_archs();
  if (archs.empty()) throw UsageError("database " + path + " has no trials");
  if (d.arch.empty()) {
    if (archs.size() > 1) {
      std::string list;
      for (const auto& a : archs) list += (list.empty() ? "" : ", ") + a;
      throw UsageError("database " + path + " holds trials for " + list + ": choose one with --arch");
    }
    d.arch = archs[0];
  }
  d.rows = store.trial_rows(d.arch);
  if (d.rows.empty()) throw UsageError("database " + path + " has no trials for " + d.arch);
  return d;
}

// Runs: one per (device, problem), in the store's order, each with its best ok trial and a label.
std::vector<Run> make_runs(const std::vector<TrialRow>& rows) {
  std::vector<Run> runs;
  std::set<int64_t> devices;
  for (const auto& t : rows) {
    if (runs.empty() || runs.back().device_id != t.device_id || runs.back().problem_id != t.problem_id) {
      Run r;
      r.device_id = t.device_id, r.problem_id = t.problem_id, r.device_name = t.device_name, r.key = t.problem_key;
      r.imported = t.imported, r.problem = t.problem, r.cublas_ms = t.cublas_ms;
      runs.push_back(std::move(r));
    }
    Run& r = runs.back();
    r.trials.push_back(&t);
    if (is_ok(t) && (!r.best || t.median_ms < r.best->median_ms)) r.best = &t;
    devices.insert(t.device_id);
  }
  const bool several_devices = devices.size() > 1;
  // The shape first: labels are cut to fit beside a bar, and the shape is what tells bars apart.
  for (auto& r : runs) {
    r.label = r.problem.shape_string() + " " + to_string(r.problem.dtype) +
              (r.problem.layout.empty() ? "" : " " + r.problem.layout) + (r.problem.op == "gemm" ? "" : " " + r.problem.op);
    if (several_devices) {
      std::string dev = r.device_name;
      if (dev.rfind("NVIDIA ", 0) == 0) dev = dev.substr(7);
      r.label += " @ " + dev;
    }
  }
  return runs;
}

// One colour per family across every chart, in the order families first appear.
class FamilyColours {
 public:
  explicit FamilyColours(const std::vector<TrialRow>& rows) {
    for (const auto& t : rows) index_.emplace(t.family, index_.size());
  }
  const char* operator()(const std::string& f) const {
    const auto it = index_.find(f);
    return colour(it == index_.end() ? index_.size() : it->second);
  }

 private:
  std::map<std::string, size_t> index_;
};

// A run's trials on a time axis: seconds since the first was recorded (wall clock), or where a
// recording time is missing, summed compile and benchmark seconds (*wall false).
std::vector<double> trial_seconds(const Run& r, bool* wall) {
  *wall = true;
  std::vector<double> at(r.trials.size());
  const auto t0 = parse_utc(r.trials[0]->created_at);
  for (size_t i = 0; i < r.trials.size() && *wall; ++i) {
    const auto ti = parse_utc(r.trials[i]->created_at);
    if (!t0 || !ti) *wall = false;
    else at[i] = *ti - *t0;
  }
  if (!*wall) { // summed compile and benchmark seconds instead
    double s = 0;
    for (size_t i = 0; i < r.trials.size(); ++i) s += r.trials[i]->compile_s + r.trials[i]->bench_s, at[i] = s;
  }
  return at;
}

// One convergence chart of run ri: best-so-far per family (and over all families where several
// ran) against the trial index (by_time false) or against at.
Figure convergence_chart(const Run& r, size_t ri, bool by_time, const std::vector<double>& at, bool wall,
                         const FamilyColours& family_colour) {
  std::vector<std::string> fams;
  for (const auto* t : r.trials)
    if (std::find(fams.begin(), fams.end(), t->family) == fams.end()) fams.push_back(t->family);
  size_t ok = 0;
  for (const auto* t : r.trials) ok += is_ok(*t);
  XYChart c;
  c.id = fmt("conv-%s-%02zu", by_time ? "seconds" : "trials", ri + 1);
  c.file = c.id + "-" + safe_name(r.key.substr(r.key.find('/') + 1)) + ".svg";
  c.title = "Convergence: " + r.label + (by_time ? " (by time)" : " (by trial)");
  c.subtitle = r.key + (r.imported ? " imported table " : " on ") + r.device_name + ": " + std::to_string(ok) +
               " ok of " + std::to_string(r.trials.size()) + " trials";
  c.xlabel = !by_time ? "trial (recording order, failed trials included)"
                      : (wall ? "seconds since the first trial was recorded (wall clock)"
                              : "summed compile + benchmark seconds (no recording times)");
  c.ylabel = "best median time so far (ms)";
  c.empty_note = "no ok trial";
  if (!by_time) c.xrange = std::make_pair(0.0, double(r.trials.size()) + 1);
  std::optional<double> overall;
  Series all{"all families (best so far)", "#444444", {}, false, true, true, true};
  for (size_t fi = 0; fi < fams.size(); ++fi) {
    Series s{fams[fi], family_colour(fams[fi]), {}, true, true, true, false};
    std::optional<double> best;
    for (size_t i = 0; i < r.trials.size(); ++i) {
      const TrialRow& t = *r.trials[i];
      if (t.family != fams[fi] || !is_ok(t)) continue;
      best = best ? std::min(*best, t.median_ms) : t.median_ms;
      const double x = !by_time ? double(i + 1) : at[i];
      s.pts.push_back({x, *best,
                       fmt("trial %zu, %s: %.4g ms (%s); best so far %.4g ms", i + 1, t.family.c_str(), t.median_ms,
                           config_short(t.config_json).c_str(), *best)});
    }
    c.series.push_back(std::move(s));
  }
  for (size_t i = 0; i < r.trials.size(); ++i)
    if (is_ok(*r.trials[i])) {
      overall = overall ? std::min(*overall, r.trials[i]->median_ms) : r.trials[i]->median_ms;
      all.pts.push_back({!by_time ? double(i + 1) : at[i], *overall, ""});
    }
  if (fams.size() > 1) c.series.push_back(std::move(all));
  std::vector<double> ys;
  for (const auto& s : c.series)
    for (const auto& p : s.pts) ys.push_back(p.y);
  c.ylog = !ys.empty() && *std::max_element(ys.begin(), ys.end()) > 8 * *std::min_element(ys.begin(), ys.end());
  return render_xy(c);
}

// 1. Convergence per run, against the trial index and against seconds. A run of one trial (an
// imported table's entry, a single config tried) has nothing to converge: such runs go into one
// table instead of a page of one-point plots.
std::string convergence_section(const std::vector<Run>& runs, const FamilyColours& family_colour, std::vector<Figure>& figs) {
  std::string html_conv, single_rows;
  size_t singles = 0;
  for (size_t ri = 0; ri < runs.size(); ++ri) {
    const Run& r = runs[ri];
    if (r.trials.size() <= 1) {
      const TrialRow& t = *r.trials[0];
      ++singles;
      single_rows += "<tr><td>" + esc(r.key) + "</td><td>" + esc(r.device_name) + (r.imported ? " (imported)" : "") +
                     "</td><td>" + esc(t.family) + "</td><td><code>" + esc(config_short(t.config_json)) + "</code></td><td>" +
                     (is_ok(t) ? fmt("%.4g ms", t.median_ms) : std::string(to_string(t.status))) + "</td></tr>\n";
      continue;
    }
    bool wall = true;
    const std::vector<double> at = trial_seconds(r, &wall);
    figs.push_back(convergence_chart(r, ri, false, at, wall, family_colour));
    figs.push_back(convergence_chart(r, ri, true, at, wall, family_colour));
    html_conv += "<h3>" + esc(r.label) + "</h3>\n";
    html_conv += figure_html(figs[figs.size() - 2], "Best-so-far median time of each family against the trial index.", true);
    html_conv += figure_html(figs.back(), wall ? "The same against wall-clock seconds from the run's first recorded trial."
                                               : "The same against summed compile and benchmark seconds.",
                             true);
  }
  if (singles)
    html_conv += "<h3>Problems with one trial</h3>\n<p class=\"note\">" + std::to_string(singles) +
                 " problem(s) with a single recorded trial: no search to plot.</p>\n<div class=\"scroll\"><table>"
                 "<tr><th>problem</th><th>device</th><th>family</th><th>config</th><th>median</th></tr>\n" +
                 single_rows + "</table></div>\n";
  return html_conv;
}

// 2. ktune's best against cuBLAS.
std::string ratio_section(const std::vector<Run>& runs, std::vector<Figure>& figs) {
  std::vector<Bar> ratio_bars;
  std::vector<std::string> no_ratio;
  for (const auto& r : runs) {
    if (!r.best || !r.cublas_ms || *r.cublas_ms <= 0) {
      no_ratio.push_back(r.label + (r.best ? " (no cuBLAS time)" : " (no ok trial)"));
      continue;
    }
    const double v = *r.cublas_ms / r.best->median_ms;
    ratio_bars.push_back({r.label,
                          fmt("%s: cuBLAS %.4g ms / ktune %.4g ms (%s) = %.3f", r.key.c_str(), *r.cublas_ms,
                              r.best->median_ms, r.best->family.c_str(), v),
                          v >= 1 ? "#009E73" : "#D55E00", v});
  }
  figs.push_back(render_columns("vs-cublas", "vs-cublas.svg", "ktune against cuBLAS per problem",
                                "bars: cuBLAS median time / ktune's best median time (above 1: ktune is faster)",
                                "cuBLAS time / ktune best time (x)", ratio_bars, 1.0, "1.0: parity",
                                {{"ktune faster", "#009E73"}, {"cuBLAS faster", "#D55E00"}}));
  const Figure& fig_ratio = figs.back();
  std::string html_ratio = figure_html(fig_ratio, "One bar per problem with both an ok trial and a cuBLAS baseline "
                                                  "(measured on the same device); the dashed line marks parity.");
  if (!no_ratio.empty()) {
    html_ratio += "<p class=\"note\">Without a bar: ";
    for (size_t i = 0; i < no_ratio.size(); ++i) html_ratio += (i ? "; " : "") + esc(no_ratio[i]);
    html_ratio += ".</p>\n";
  }
  return html_ratio;
}

// A compute roof of the roofline: given (--peak-tflops), or assumed per dtype.
struct Roof {
  std::string name;
  double peak;
  bool assumed;
  std::string basis;
};

// The memory roof in TB/s, and whether --copy-tb-s gave it.
struct MemoryRoof {
  double bw;
  bool given;
};

// The roofline chart: one point per run with a best config, under the memory roof and the
// compute roofs.
Figure roofline_chart(const std::vector<Run>& runs, const std::string& arch, const MemoryRoof& mem,
                      const std::vector<Roof>& roofs, const FamilyColours& family_colour) {
  const double bw = mem.bw;
  const bool bw_given = mem.given;
  XYChart roof;
  roof.id = "roofline", roof.file = "roofline.svg";
  roof.title = "Roofline of the best configs (" + arch + ")";
  roof.subtitle = std::string("memory roof ") + num(bw) + " TB/s" + (bw_given ? " (given)" : " (assumed)") +
                  "; minimum bytes: A, B and C once";
  roof.xlabel = "arithmetic intensity (FLOP / minimum byte)";
  roof.ylabel = "achieved TFLOPS (median time)";
  roof.xlog = roof.ylog = true;
  roof.empty_note = "no ok trial";
  std::map<std::string, size_t> fam_series;
  std::vector<double> ai_all, tf_all;
  size_t best_points = 0;
  for (const auto& r : runs) {
    // A run that counts no FLOPs (a user kernel without "flops": a transpose) has no place on it.
    if (!r.best || !(flops(r.problem) > 0)) continue;
    const double ai = flops(r.problem) / min_bytes(r.problem);
    const double tf = tflops(r.problem, r.best->median_ms);
    auto it = fam_series.find(r.best->family);
    if (it == fam_series.end()) {
      it = fam_series.emplace(r.best->family, roof.series.size()).first;
      roof.series.push_back({"best: " + r.best->family, family_colour(r.best->family), {}, true, false, false, false});
    }
    roof.series[it->second].pts.push_back(
        {ai, tf,
         fmt("%s: %.4g TFLOPS at %.4g FLOP/B (%s %s, %.4g ms)", r.key.c_str(), tf, ai, r.best->family.c_str(),
             config_short(r.best->config_json).c_str(), r.best->median_ms),
         r.problem.shape_string()});
    ai_all.push_back(ai), tf_all.push_back(tf);
    ++best_points;
  }
  if (!ai_all.empty()) {
    double xlo = *std::min_element(ai_all.begin(), ai_all.end()), xhi = *std::max_element(ai_all.begin(), ai_all.end());
    double ylo = *std::min_element(tf_all.begin(), tf_all.end()), yhi = *std::max_element(tf_all.begin(), tf_all.end());
    for (const auto& rf : roofs) xlo = std::min(xlo, rf.peak / bw), xhi = std::max(xhi, rf.peak / bw), yhi = std::max(yhi, rf.peak);
    xlo /= 2, xhi *= 2, ylo /= 3, yhi *= 1.6;
    roof.xrange = std::make_pair(xlo, xhi);
    roof.yrange = std::make_pair(ylo, yhi);
    const size_t first_roof = roof.series.size();
    // The slope up to the highest ridge; each compute roof flat from its own ridge.
    double top_peak = 0;
    for (const auto& rf : roofs) top_peak = std::max(top_peak, rf.peak);
    const double x_end = std::min(xhi, top_peak / bw);
    roof.series.push_back({"memory " + num(bw) + " TB/s" + (bw_given ? " (given)" : " (assumed)"), "#222222",
                           {{xlo, xlo * bw}, {x_end, x_end * bw}}, false, true, false, true});
    for (size_t i = 0; i < roofs.size(); ++i) {
      const double ridge = std::max(xlo, roofs[i].peak / bw);
      roof.series.push_back({roofs[i].name, colour(first_roof + 2 + i), {{ridge, roofs[i].peak}, {xhi, roofs[i].peak}},
                             false, true, false, true});
    }
  }
  roof.label_points = best_points <= 12;
  return render_xy(roof);
}

// 3. Roofline of the best configs.
std::string roofline_section(const std::vector<Run>& runs, const std::string& arch, const ReportOptions& o,
                             const FamilyColours& family_colour, std::vector<Figure>& figs) {
  const bool bw_given = o.copy_tb_s.has_value();
  const double bw = bw_given ? *o.copy_tb_s : kAssumedCopyTBs;
  std::vector<DType> dtypes;
  for (const auto& r : runs)
    if (r.best && std::find(dtypes.begin(), dtypes.end(), r.problem.dtype) == dtypes.end()) dtypes.push_back(r.problem.dtype);
  std::vector<Roof> roofs;
  if (o.peak_tflops) roofs.push_back({"peak " + num(*o.peak_tflops) + " TFLOPS (given)", *o.peak_tflops, false, "--peak-tflops"});
  else
    for (DType d : dtypes) {
      const auto g = assumed_peak(arch, d);
      roofs.push_back({std::string(to_string(d)) + " peak " + num(g.tflops) + " TFLOPS (assumed)", g.tflops, true, g.basis});
    }
  figs.push_back(roofline_chart(runs, arch, {bw, bw_given}, roofs, family_colour));
  std::string html_roof = figure_html(
      figs.back(), "One point per problem: its best config's TFLOPS (2MNK / median time) against 2MNK / minimum bytes "
                   "(A and B read and C written once, element size of the problem's dtype). The roof is "
                   "min(peak, intensity x bandwidth).");
  html_roof += "<ul class=\"note\"><li>Memory roof: " + num(bw) + " TB/s, " +
               (bw_given ? std::string("given with --copy-tb-s.")
                         : std::string("<span class=\"assumed\">assumed</span>: the database records no copy bandwidth; "
                                       "give the device's, e.g. the one <code>ktune bench</code> prints, with "
                                       "<code>--copy-tb-s</code>.")) +
               "</li>";
  for (const auto& rf : roofs)
    html_roof += "<li>" + esc(rf.name.substr(0, rf.name.rfind(" ("))) + ": " +
                 (rf.assumed ? "<span class=\"assumed\">assumed</span> (" + esc(rf.basis) +
                                   "; give the device's with <code>--peak-tflops</code>)"
                             : std::string("given with --peak-tflops")) +
                 "</li>";
  if (!o.peak_tflops && std::find(dtypes.begin(), dtypes.end(), DType::f32) != dtypes.end())
    html_roof += "<li>The f32 roof is the FP32 (CUDA core) peak; gemm_tf32x3 runs on the TF32 tensor cores and may pass it.</li>";
  html_roof += "</ul>\n";
  return html_roof;
}

const char* const kImportanceNote =
    "<p class=\"note\">The <code>model</code> strategy's cost model (tuner/strategy.cpp) is a k-nearest-neighbour "
    "regression of log(time) over each parameter's position in its domain, scaled to [0, 1] and weighted alike: it "
    "learns no per-parameter weights and exposes no importance. What is shown is computed here from the recorded ok "
    "trials instead. Per family, each trial's log(median time) less the mean of its problem's trials of that family "
    "(so that problem size does not count) is grouped by the parameter's value; "
    "&eta;&sup2; = SS<sub>between</sub> / SS<sub>total</sub> is the share of variance the grouping explains, and "
    "&epsilon;&sup2; = (SS<sub>between</sub> &minus; (k&minus;1)&middot;SS<sub>within</sub>/df) / SS<sub>total</sub> "
    "with df = n &minus; problems &minus; (k&minus;1) (at least 3, else the parameter is not estimated), clipped at 0, "
    "removes what k groups would explain by chance. "
    "Parameters that move together in the sampled configs share credit; few trials make these rough. Runs with one ok "
    "trial of a family and parameters constant over the trials are left out.</p>\n";

// 4. Parameter importance.
std::string importance_section(const std::vector<Run>& runs, const FamilyColours& family_colour, std::vector<Figure>& figs) {
  auto imps = importance(runs);
  std::stable_sort(imps.begin(), imps.end(), [&](const Importance& a, const Importance& b) {
    if (a.family != b.family) return a.family < b.family;
    return a.eps2 > b.eps2;
  });
  std::vector<Bar> imp_bars;
  for (const auto& i : imps) {
    if (!i.estimable) continue;
    imp_bars.push_back({i.family + " " + i.param,
                        fmt("%s %s: eps^2 %.3f, eta^2 %.3f (%zu values, %zu ok trials)", i.family.c_str(), i.param.c_str(),
                            i.eps2, i.eta2, i.k, i.n),
                        family_colour(i.family), i.eps2});
  }
  figs.push_back(render_rows("importance", "importance.svg", "Parameter importance per family",
                             "share of the variance of log(time) explained by the parameter's value (bias-corrected)",
                             "epsilon squared (0: no effect beyond chance, 1: explains all)", imp_bars,
                             "too few ok trials to estimate any parameter's effect"));
  std::string html_imp = figure_html(figs.back(), "One bar per family and parameter that varied and could be estimated.");
  html_imp += kImportanceNote;
  if (!imps.empty()) {
    html_imp += "<table><tr><th>family</th><th>parameter</th><th>values seen (k)</th><th>ok trials (n)</th>"
                "<th>residual df</th><th>&eta;&sup2;</th><th>&epsilon;&sup2;</th></tr>\n";
    for (const auto& i : imps)
      html_imp += "<tr>" + td(i.family) + td(i.param) + td(std::to_string(i.k), true) + td(std::to_string(i.n), true) +
                  td(std::to_string(i.df), true) + td(fmt("%.3f", i.eta2), true) + td(i.estimable ? fmt("%.3f", i.eps2) : "n/a", true) + "</tr>\n";
    html_imp += "</table>\n<p class=\"note\">n/a: fewer than 3 residual degrees of freedom; not plotted.</p>\n";
  }
  return html_imp;
}

// The page's head and the table of what the report covers.
std::string page_head(const ReportOptions& o, const Loaded& d, size_t nruns) {
  std::map<std::string, size_t> by_status;
  std::string first_at, last_at;
  std::set<std::string> device_names;
  for (const auto& t : d.rows) {
    ++by_status[to_string(t.status)];
    if (first_at.empty() || t.created_at < first_at) first_at = t.created_at;
    if (last_at.empty() || t.created_at > last_at) last_at = t.created_at;
    device_names.insert(t.device_name + (t.imported ? " (imported table)" : ""));
  }
  std::string devs, statuses;
  for (const auto& dn : device_names) devs += (devs.empty() ? "" : "; ") + dn;
  for (const auto& [s, n] : by_status) statuses += (statuses.empty() ? "" : ", ") + std::to_string(n) + " " + s;

  std::string h = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                  "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                  "<link rel=\"icon\" href=\"data:,\">\n<title>ktune report: " +
                  esc(d.arch) + " " + esc(devs) + "</title>\n<style>" + kCss + "</style>\n</head>\n<body>\n";
  h += "<h1>ktune report</h1>\n";
  if (!o.note.empty()) h += "<p>" + esc(o.note) + "</p>\n";
  h += "<table>\n";
  h += "<tr><th>database</th>" + td(d.path) + "</tr>\n";
  h += "<tr><th>arch</th>" + td(d.arch) + "</tr>\n";
  h += "<tr><th>device</th>" + td(devs) + "</tr>\n";
  h += "<tr><th>trials</th>" + td(std::to_string(d.rows.size()) + " (" + statuses + ") over " + std::to_string(nruns) +
                                  " problem(s)") + "</tr>\n";
  h += "<tr><th>recorded</th>" + td(first_at + " to " + last_at + " (UTC)") + "</tr>\n";
  h += "<tr><th>command</th><td><code>" + esc(o.command) + "</code></td></tr>\n";
  h += "<tr><th>generated</th>" + td(now_utc() + " by ktune " + KTUNE_VERSION) + "</tr>\n</table>\n";
  h += "<p class=\"note\">Self-contained: inline CSS and SVG, no scripts, fonts or network. Each figure is also a file "
       "beside this page; hover a point or bar for its numbers. The store does not record which strategy ran a "
       "search, so the convergence lines are per kernel family.</p>\n";
  return h;
}

// The summary: a row per run with its best config and cuBLAS.
std::string summary_table(const std::vector<Run>& runs) {
  std::string h = "<h2>Summary</h2>\n<div class=\"scroll\"><table><tr><th>problem</th><th>device</th><th>ok / trials</th><th>best family</th>"
       "<th>best config</th><th>best ms</th><th>TFLOPS</th><th>cuBLAS ms</th><th>cuBLAS / best</th></tr>\n";
  for (const auto& r : runs) {
    size_t ok = 0;
    for (const auto* t : r.trials) ok += is_ok(*t);
    h += "<tr>" + td(r.key) + td(r.device_name) + td(std::to_string(ok) + " / " + std::to_string(r.trials.size()), true);
    if (r.best)
      h += td(r.best->family) + "<td><code>" + esc(config_short(r.best->config_json)) + "</code></td>" + td(fmt("%.4g", r.best->median_ms), true) +
           td(fmt("%.1f", tflops(r.problem, r.best->median_ms)), true);
    else h += td("-") + td("-") + td("-") + td("-");
    h += td(r.cublas_ms ? fmt("%.4g", *r.cublas_ms) : "-", true);
    h += td(r.best && r.cublas_ms ? fmt("%.3f", *r.cublas_ms / r.best->median_ms) : "-", true) + "</tr>\n";
  }
  h += "</table></div>\n";
  return h;
}

// Writes the figures and the page: the folder may be new; files are replaced whole.
void write_report(const std::string& out_dir, const std::vector<Figure>& figs, const std::string& html) {
  const std::filesystem::path dir(out_dir);
  std::error_code ec;
  if (std::filesystem::exists(dir, ec) && !std::filesystem::is_directory(dir, ec))
    throw Error("cannot write the report: " + out_dir + " is not a folder");
  std::filesystem::create_directories(dir, ec);
  if (ec) throw Error("cannot create the report folder " + out_dir + ": " + ec.message());
  if (!std::filesystem::is_directory(dir)) throw Error("cannot write the report: " + out_dir + " is not a folder");
  for (const auto& f : figs) write_file(dir / f.file, f.standalone());
  write_file(dir / "index.html", html);
}

} // namespace

int run_report(const ReportOptions& o) {
  ktune::cli::load_kernels(o.kernels);
  const Loaded d = load_trials(o);
  const std::vector<Run> runs = make_runs(d.rows);
  const FamilyColours family_colour(d.rows);
  std::vector<Figure> figs;
  const std::string html_conv = convergence_section(runs, family_colour, figs);
  const std::string html_ratio = ratio_section(runs, figs);
  const std::string html_roof = roofline_section(runs, d.arch, o, family_colour, figs);
  const std::string html_imp = importance_section(runs, family_colour, figs);

  std::string h = page_head(o, d, runs.size()) + summary_table(runs);
  h += "<h2>1. Convergence of the search</h2>\n<p class=\"note\">Per problem: the best median time each family had "
       "reached after each of its ok trials (markers), and over all families (dashed) where several ran.</p>\n" + html_conv;
  h += "<h2>2. ktune against cuBLAS</h2>\n" + html_ratio;
  h += "<h2>3. Roofline</h2>\n" + html_roof;
  h += "<h2>4. Parameter importance</h2>\n" + html_imp;
  h += "</body>\n</html>\n";

  write_report(o.out_dir, figs, h);
  const std::filesystem::path dir(o.out_dir);
  std::fprintf(stderr, "ktune: wrote %s with %zu figures (%zu trials of %zu problems, %s)\n",
               (dir / "index.html").string().c_str(), figs.size(), d.rows.size(), runs.size(), d.arch.c_str());
  return 0;
}

int run_report(ReportOptions o, int argc, char** argv) {
  o.command = "ktune";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool plain = a.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./=:,+") == std::string::npos;
    o.command += " " + (plain && !a.empty() ? a : "'" + a + "'");
  }
  return run_report(o);
}

} // namespace ktune
