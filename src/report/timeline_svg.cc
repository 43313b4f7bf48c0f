// aotgrad: SVG plots of activation timelines (`aotgrad compile --timeline`).
#include "aotgrad/report/timeline_svg.h"

#include <algorithm>
#include <cstdio>

#include "aotgrad/transforms/partition/partition.h"

namespace aotgrad {
namespace {

std::string bytes_text(int64_t b) {
  char buf[64];
  if (b >= (int64_t{1} << 20))
    std::snprintf(buf, sizeof buf, "%.2f MiB", static_cast<double>(b) / (1 << 20));
  else if (b >= 1024)
    std::snprintf(buf, sizeof buf, "%.1f KiB", static_cast<double>(b) / 1024);
  else
    std::snprintf(buf, sizeof buf, "%lld B", static_cast<long long>(b));
  return buf;
}

std::string xml_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<')
      out += "&lt;";
    else if (c == '>')
      out += "&gt;";
    else if (c == '&')
      out += "&amp;";
    else if (c == '"')
      out += "&quot;";
    else
      out += c;
  }
  return out;
}

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

}  // namespace

std::string timeline_svg(const std::vector<std::pair<std::string, MemoryTimeline>>& series,
                         const std::string& title) {
  const double width = 900, height = 480, left = 90, right = 30, top = 50, bottom = 70;
  const double plot_w = width - left - right, plot_h = height - top - bottom;
  const char* colours[] = {"#1f78b4", "#e31a1c", "#33a02c", "#ff7f00"};
  size_t max_steps = 1;
  int64_t max_bytes = 1;
  for (const auto& [label, t] : series) {
    max_steps = std::max(max_steps, t.steps.size());
    max_bytes = std::max(max_bytes, t.peak_bytes);
  }
  auto x_of = [&](size_t step) {
    return left + (max_steps > 1 ? plot_w * static_cast<double>(step) / (max_steps - 1) : 0);
  };
  auto y_of = [&](int64_t b) {
    return top + plot_h - plot_h * static_cast<double>(b) / static_cast<double>(max_bytes);
  };
  std::string out = "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + num(width) +
                    "\" height=\"" + num(height) + "\" viewBox=\"0 0 " + num(width) + " " +
                    num(height) +
                    "\" font-family=\"Helvetica, Arial, sans-serif\" font-size=\"12\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += "<text x=\"" + num(width / 2) + "\" y=\"24\" text-anchor=\"middle\" font-size=\"16\">" +
         xml_escape(title) + "</text>\n";
  // Axes with ticks.
  out += "<g class=\"axes\" stroke=\"black\" fill=\"none\">\n<line x1=\"" + num(left) + "\" y1=\"" +
         num(top + plot_h) + "\" x2=\"" + num(left + plot_w) + "\" y2=\"" + num(top + plot_h) +
         "\"/>\n<line x1=\"" + num(left) + "\" y1=\"" + num(top) + "\" x2=\"" + num(left) +
         "\" y2=\"" + num(top + plot_h) + "\"/>\n</g>\n";
  for (int k = 0; k <= 4; ++k) {
    int64_t b = max_bytes * k / 4;
    double y = y_of(b);
    out += "<line x1=\"" + num(left - 4) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left) +
           "\" y2=\"" + num(y) + "\" stroke=\"black\"/>\n<text x=\"" + num(left - 8) + "\" y=\"" +
           num(y + 4) + "\" text-anchor=\"end\">" + bytes_text(b) + "</text>\n";
    size_t s = (max_steps - 1) * k / 4;
    double x = x_of(s);
    out += "<line x1=\"" + num(x) + "\" y1=\"" + num(top + plot_h) + "\" x2=\"" + num(x) +
           "\" y2=\"" + num(top + plot_h + 4) + "\" stroke=\"black\"/>\n<text x=\"" + num(x) +
           "\" y=\"" + num(top + plot_h + 18) + "\" text-anchor=\"middle\">" + std::to_string(s) +
           "</text>\n";
  }
  out += "<text x=\"" + num(left + plot_w / 2) + "\" y=\"" + num(height - 30) +
         "\" text-anchor=\"middle\">step (forward, then backward)</text>\n";
  out += "<text transform=\"translate(18," + num(top + plot_h / 2) +
         ") rotate(-90)\" text-anchor=\"middle\">live bytes</text>\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const auto& [label, t] = series[k];
    const char* colour = colours[k % 4];
    if (t.num_forward_steps > 0 && t.num_forward_steps < t.steps.size()) {
      double x = (x_of(t.num_forward_steps - 1) + x_of(t.num_forward_steps)) / 2;
      out += "<line class=\"boundary\" x1=\"" + num(x) + "\" y1=\"" + num(top) + "\" x2=\"" +
             num(x) + "\" y2=\"" + num(top + plot_h) + "\" stroke=\"" + colour +
             "\" stroke-dasharray=\"4 4\" stroke-opacity=\"0.5\"/>\n";
    }
    out += "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\"" +
           std::string(colour) + "\" points=\"";
    for (size_t s = 0; s < t.steps.size(); ++s)
      out += (s ? " " : "") + num(x_of(s)) + "," + num(y_of(t.steps[s].live_bytes));
    out += "\"><title>" + xml_escape(label) + "</title></polyline>\n";
    double ly = top + 10 + 18 * static_cast<double>(k);
    out += "<line x1=\"" + num(left + plot_w - 250) + "\" y1=\"" + num(ly) + "\" x2=\"" +
           num(left + plot_w - 225) + "\" y2=\"" + num(ly) + "\" stroke=\"" + colour +
           "\" stroke-width=\"2\"/>\n<text class=\"legend\" x=\"" + num(left + plot_w - 220) +
           "\" y=\"" + num(ly + 4) + "\">" + xml_escape(label) + ": peak " +
           bytes_text(t.peak_bytes) + " (" + std::to_string(t.peak_bytes) + " bytes)" +
           (t.steps.empty() ? std::string()
                            : " at " + xml_escape(t.steps[t.peak_step].node) +
                                  (t.steps[t.peak_step].backward ? " (backward)" : " (forward)")) +
           "</text>\n";
    if (!t.steps.empty())
      out += "<circle class=\"peak\" cx=\"" + num(x_of(t.peak_step)) + "\" cy=\"" +
             num(y_of(t.peak_bytes)) + "\" r=\"4\" fill=\"" + colour + "\"><title>" +
             xml_escape(label) + ": peak at " + xml_escape(t.steps[t.peak_step].node) +
             "</title></circle>\n";
  }
  out += "</svg>\n";
  return out;
}

std::string partition_timeline_svg(const Graph& joint, const JointGraph& layout, const Graph& fw,
                                   const Graph& bw, const std::vector<std::string>& saved,
                                   const std::string& label, bool gradients_kept) {
  JointGraph jg;
  jg.graph = joint.clone();
  jg.num_primals = layout.num_primals;
  jg.num_tangents = layout.num_tangents;
  jg.num_forward_outputs = layout.num_forward_outputs;
  jg.tangent_of_output = layout.tangent_of_output;
  jg.primal_requires_grad = layout.primal_requires_grad;
  Partition d = default_partition(jg);
  std::vector<std::pair<std::string, MemoryTimeline>> series;
  series.push_back(
      {label + " (chosen)", training_step_timeline(fw, bw, saved, true, gradients_kept)});
  series.push_back(
      {"default_partition", training_step_timeline(*d.fw, *d.bw, d.saved, true, gradients_kept)});
  return timeline_svg(series, "training step's live bytes: " + label + " vs default_partition");
}

}  // namespace aotgrad
