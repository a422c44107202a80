#include "common/config/runtime_switches.h"

#include "common/base/trim.h"

namespace kdns::config {

using Detail = QueryLogDetail;

std::string_view LogQueriesSwitchValue(Detail detail) {
  switch (detail) {
    case Detail::kBasic:
      return "true";
    case Detail::kExtra:
      return "extra";
    case Detail::kOff:
      break;
  }
  return "false";
}

bool ParseLogQueriesSwitch(std::string_view value, Detail* detail, std::string* error) {
  const std::string_view word = Trim(value, " \t\r\n");
  for (Detail each : {Detail::kBasic, Detail::kExtra, Detail::kOff}) {
    if (word == LogQueriesSwitchValue(each)) {
      *detail = each;
      return true;
    }
  }
  *error =
      std::string(kLogQueriesKey) + ": \"" + std::string(word) + "\" is not true, extra or false";
  return false;
}

bool ParseDebugDataSwitch(std::string_view value, bool* on, std::string* error) {
  const std::string_view word = Trim(value, " \t\r\n");
  if (word == "true" || word == "false") {
    *on = word == "true";
    return true;
  }
  *error = std::string(kDebugDataKey) + ": \"" + std::string(word) + "\" is not true or false";
  return false;
}

bool ParseRuntimeSwitches(const std::optional<std::string>& log_queries,
                          const std::optional<std::string>& debug_data, RuntimeSwitches* switches,
                          std::string* error) {
  RuntimeSwitches result;
  if (log_queries) {
    Detail detail = Detail::kOff;
    if (!ParseLogQueriesSwitch(*log_queries, &detail, error)) return false;
    result.log_queries = detail;
  }
  if (debug_data) {
    bool on = false;
    if (!ParseDebugDataSwitch(*debug_data, &on, error)) return false;
    result.debug_data = on;
  }
  *switches = result;
  return true;
}

std::string RuntimeSwitches::ToString() const {
  std::string out;
  if (log_queries) {
    out += std::string(kLogQueriesKey) + "=" + std::string(LogQueriesSwitchValue(*log_queries));
  }
  if (debug_data) {
    out += (out.empty() ? "" : " ") + std::string(kDebugDataKey) + "=" +
           (*debug_data ? "true" : "false");
  }
  return out;
}

}  // namespace kdns::config
