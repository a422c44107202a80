// Text exactly as kube-dns's Go sidecar writes it, so health-check bodies and error texts
// match byte for byte: encoding/json's float64 and string encodings (json.Marshal of the
// health struct), strconv.Quote (the %q in "no RRs for domain %q") and
// time.Duration.Seconds(). Pure functions, any thread.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace kdns::sidecar {

// A float64 as json.Marshal writes it: the shortest text that reads back to `value`, in
// plain decimal notation, switching to exponent notation below 1e-6 and from 1e21 up, with
// a one-digit negative exponent kept short ("1e-7", "1.5e+21"). NaN and infinities, which
// json.Marshal refuses, come out as 0.
std::string GoJsonFloat(double value);

// A string as json.Marshal writes it, quotes included: `"` and `\` escaped, \n \r \t \b \f,
// other control characters as \u00XX, `<` `>` `&` as \u003c \u003e \u0026 (Go's HTML-safe
// default), U+2028 and U+2029 escaped, invalid UTF-8 as \ufffd.
std::string GoJsonString(std::string_view text);

// strconv.Quote for the texts we quote (names, flag values): printable ASCII and valid
// UTF-8 kept, `"` and `\` escaped, \a \b \f \n \r \t \v, other bytes as \xNN.
std::string GoQuote(std::string_view text);

// time.Duration(ns).Seconds(): whole seconds plus the remainder / 1e9, as Go computes it.
double GoSeconds(int64_t ns);

}  // namespace kdns::sidecar
