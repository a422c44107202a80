// Error codes of the DNS codec. Parsing and building never throw and never abort on input:
// every failure is one of these values, returned [[nodiscard]].
#pragma once

#include <cstdint>
#include <string_view>

namespace kdns::dns {

enum class [[nodiscard]] ParseError : uint8_t{
    kOk = 0,
    kTruncated,            // a read ran past the end of the message (or of the rdata)
    kBadPointer,           // compression pointer forward or past the end (RFC 1035 §4.1.4)
    kPointerLoop,          // pointer into the name being read, or too many pointer hops
    kLabelTooLong,         // a label over 63 octets (text form)
    kNameTooLong,          // a name over 255 octets in wire form
    kBadLabelType,         // reserved label types 0x40 and 0x80 (RFC 6891 §5)
    kEmptyLabel,           // "a..b" or a leading dot (text form)
    kBadEscape,            // "\" not followed by a character or three digits <= 255 (text form)
    kNoQuestion,           // a query with QDCOUNT 0
    kTooManyQuestions,     // a query with QDCOUNT > 1
    kCountMismatch,        // a section count claims more records than the message holds
    kBadRdata,             // rdata that does not fit its type
    kRdataLengthMismatch,  // typed rdata shorter or longer than RDLENGTH
    kTrailingGarbage,      // bytes after the last record
    kMultipleOpt,          // more than one OPT record (RFC 6891 §6.1.1)
    kOptNotInAdditional,   // an OPT record in the answer or authority section
    kBadOpt,               // an OPT record whose owner is not the root
    kBadText,              // presentation text that does not parse
};

enum class [[nodiscard]] BuildError : uint8_t{
    kOk = 0,
    kNoSpace,    // did not fit the size limit; see MessageBuilder for what was kept
    kTruncated,  // dropped because the message is already truncated (TC set)
    kBadRdata,   // rdata that cannot be written (wrong variant for the type, long strings)
    kBadOrder,   // a section written after a later one, or an RRset left open
};

std::string_view ToString(ParseError error);
std::string_view ToString(BuildError error);

}  // namespace kdns::dns

// Returns the ParseError of `expr` from the enclosing function unless it is kOk.
#define KDNS_RETURN_IF_PARSE_ERROR(expr)                                                   \
  do {                                                                                     \
    if (::kdns::dns::ParseError error_ = (expr); error_ != ::kdns::dns::ParseError::kOk) { \
      return error_;                                                                       \
    }                                                                                      \
  } while (false)
