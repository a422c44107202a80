#include "common/dns/errors.h"

namespace kdns::dns {

std::string_view ToString(ParseError error) {
  switch (error) {
    case ParseError::kOk:
      return "ok";
    case ParseError::kTruncated:
      return "truncated";
    case ParseError::kBadPointer:
      return "bad compression pointer";
    case ParseError::kPointerLoop:
      return "compression pointer loop";
    case ParseError::kLabelTooLong:
      return "label longer than 63 octets";
    case ParseError::kNameTooLong:
      return "name longer than 255 octets";
    case ParseError::kBadLabelType:
      return "reserved label type";
    case ParseError::kEmptyLabel:
      return "empty label";
    case ParseError::kBadEscape:
      return "bad escape";
    case ParseError::kNoQuestion:
      return "no question";
    case ParseError::kTooManyQuestions:
      return "more than one question";
    case ParseError::kCountMismatch:
      return "section count larger than the records present";
    case ParseError::kBadRdata:
      return "bad rdata";
    case ParseError::kRdataLengthMismatch:
      return "rdata length mismatch";
    case ParseError::kTrailingGarbage:
      return "trailing bytes after the last record";
    case ParseError::kMultipleOpt:
      return "more than one OPT record";
    case ParseError::kOptNotInAdditional:
      return "OPT record outside the additional section";
    case ParseError::kBadOpt:
      return "OPT record with a non-root owner";
    case ParseError::kBadText:
      return "bad presentation text";
  }
  return "unknown parse error";
}

std::string_view ToString(BuildError error) {
  switch (error) {
    case BuildError::kOk:
      return "ok";
    case BuildError::kNoSpace:
      return "no space";
    case BuildError::kTruncated:
      return "message already truncated";
    case BuildError::kBadRdata:
      return "rdata does not match its type";
    case BuildError::kBadOrder:
      return "sections out of order";
  }
  return "unknown build error";
}

}  // namespace kdns::dns
