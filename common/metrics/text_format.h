// Building blocks of the Prometheus text exposition format, version 0.0.4: name rules,
// number formatting, escaping and sample lines. Registry uses them to render; they are
// public so tests and other exposition code (a collector's self-check, the sidecar's legacy
// names) agree with it. Pure functions, any thread.
#pragma once

#include <span>
#include <string>
#include <string_view>

namespace kdns::metrics {

// The Content-Type of a /metrics response in this format.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]*
[[nodiscard]] bool IsValidMetricName(std::string_view name);

// [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__" (reserved for Prometheus itself).
[[nodiscard]] bool IsValidLabelName(std::string_view name);

// Joins the non-empty parts with '_', like the Go client's BuildFQName, so legacy names come
// out whole: BuildFqName("kubedns", "dnsmasq", "hits") == "kubedns_dnsmasq_hits". Returns ""
// when `name` is empty. Nothing adds a `_total` suffix or a namespace behind the caller's back.
std::string BuildFqName(std::string_view name_space, std::string_view subsystem,
                        std::string_view name);

// A double exactly as Prometheus's Go client writes it (expfmt writeFloat: Go's
// strconv.FormatFloat(v, 'g', -1, 64), i.e. the shortest text that reads back to v, with an
// exponent below 1e-4 and from 1e6 up), and "+Inf", "-Inf", "NaN". Used for `le` label
// values, which dashboards match as text: 0.25, 1, 8192, 1e+06, 1e-09.
std::string FormatGoFloat(double value);

// A sample value: integral values below 2^53 in magnitude (exact in a double) as plain
// integers ("1234567", where the Go client writes "1.234567e+06"), everything else as
// FormatGoFloat. Prometheus reads both forms as the same number.
std::string FormatValue(double value);

// HELP text escapes '\' and newline; label values also escape '"'.
void AppendEscapedHelp(std::string& out, std::string_view help);
void AppendEscapedLabelValue(std::string& out, std::string_view value);

// "# HELP name help\n# TYPE name type\n".
void AppendFamilyHeader(std::string& out, std::string_view name, std::string_view help,
                        std::string_view type);

// One sample line, `name{a="x",b="y",extra="e"} value\n`; the braces are left out when there
// are no labels. `label_names` and `label_values` have the same size (CHECKed). The extra
// label (a histogram's `le`) comes last, when `extra_label_name` is not empty.
void AppendSampleLine(std::string& out, std::string_view name,
                      std::span<const std::string> label_names,
                      std::span<const std::string> label_values, std::string_view value,
                      std::string_view extra_label_name = {},
                      std::string_view extra_label_value = {});

}  // namespace kdns::metrics
