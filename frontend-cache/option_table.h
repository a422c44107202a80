// Internal to frontend-cache's command line (options.cc): the table of every option it
// takes, each with its long name, dnsmasq's short letter, whether it takes a value, and the
// setter that checks the value and stores it into Options (option_table.cc). ParseOptions
// scans the arguments and looks each one up here.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "frontend-cache/options.h"

namespace kdns::frontend {

using Setter = std::function<bool(std::string_view value, Options* options, std::string* error)>;

struct OptionSpec {
  std::string_view name;  // long form, without "--"
  char short_name;        // dnsmasq's short form, or 0
  bool takes_value;
  Setter set;
  // A flag that may carry a value with "=" (--log-queries=extra); never the next argument.
  bool optional_value = false;
};

// The option named `name` (long form, without "--"), or with dnsmasq's short letter `name`;
// nullptr when there is none.
const OptionSpec* FindLong(std::string_view name);
const OptionSpec* FindShort(char name);

// Every option, in the table's order.
const std::vector<OptionSpec>& AllOptionSpecs();

}  // namespace kdns::frontend
