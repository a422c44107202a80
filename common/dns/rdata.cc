#include "common/dns/rdata.h"

#include "common/dns/wire_reader.h"

namespace kdns::dns {
namespace {

[[nodiscard]] ParseError ReadCharacterString(WireReader& reader, std::string* out) {
  uint8_t length = 0;
  std::span<const uint8_t> bytes;
  if (!reader.ReadU8(&length) || !reader.ReadBytes(length, &bytes)) return ParseError::kBadRdata;
  out->assign(bytes.begin(), bytes.end());
  return ParseError::kOk;
}

// A name inside rdata: running past the rdata is a length mismatch, not a truncated packet.
[[nodiscard]] ParseError ReadRdataName(WireReader& reader, Name* name) {
  ParseError error = reader.ReadName(name);
  return error == ParseError::kTruncated ? ParseError::kRdataLengthMismatch : error;
}

[[nodiscard]] ParseError ParseTyped(WireReader& reader, RrType type, Rdata* rdata) {
  constexpr ParseError kShort = ParseError::kRdataLengthMismatch;
  switch (type) {
    case RrType::kA:
    case RrType::kAaaa: {
      size_t size = type == RrType::kA ? IpAddress::kV4Size : IpAddress::kV6Size;
      std::span<const uint8_t> bytes;
      if (reader.remaining() != size || !reader.ReadBytes(size, &bytes)) return kShort;
      IpAddress address = *IpAddress::FromBytes(bytes);
      if (type == RrType::kA) {
        *rdata = RdataA{address};
      } else {
        *rdata = RdataAaaa{address};
      }
      return ParseError::kOk;
    }
    case RrType::kNs: {
      RdataNs ns;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &ns.host));
      *rdata = ns;
      return ParseError::kOk;
    }
    case RrType::kCname: {
      RdataCname cname;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &cname.target));
      *rdata = cname;
      return ParseError::kOk;
    }
    case RrType::kPtr: {
      RdataPtr ptr;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &ptr.target));
      *rdata = ptr;
      return ParseError::kOk;
    }
    case RrType::kDname: {
      RdataDname dname;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &dname.target));
      *rdata = dname;
      return ParseError::kOk;
    }
    case RrType::kSoa: {
      RdataSoa soa;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &soa.mname));
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &soa.rname));
      if (!reader.ReadU32(&soa.serial) || !reader.ReadU32(&soa.refresh_s) ||
          !reader.ReadU32(&soa.retry_s) || !reader.ReadU32(&soa.expire_s) ||
          !reader.ReadU32(&soa.minimum_s)) {
        return kShort;
      }
      *rdata = soa;
      return ParseError::kOk;
    }
    case RrType::kMx: {
      RdataMx mx;
      if (!reader.ReadU16(&mx.preference)) return kShort;
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &mx.exchange));
      *rdata = mx;
      return ParseError::kOk;
    }
    case RrType::kSrv: {
      RdataSrv srv;
      if (!reader.ReadU16(&srv.priority) || !reader.ReadU16(&srv.weight) ||
          !reader.ReadU16(&srv.port)) {
        return kShort;
      }
      // RFC 2782 forbids compressing the target, but RFC 3597 §4 asks receivers to accept it.
      KDNS_RETURN_IF_PARSE_ERROR(ReadRdataName(reader, &srv.target));
      *rdata = srv;
      return ParseError::kOk;
    }
    case RrType::kTxt: {
      RdataTxt txt;
      // At least one string: empty TXT rdata is malformed (RFC 1035 §3.3.14).
      do {
        std::string text;
        KDNS_RETURN_IF_PARSE_ERROR(ReadCharacterString(reader, &text));
        txt.strings.push_back(std::move(text));
      } while (!reader.AtEnd());
      *rdata = std::move(txt);
      return ParseError::kOk;
    }
    case RrType::kHinfo: {
      RdataHinfo hinfo;
      KDNS_RETURN_IF_PARSE_ERROR(ReadCharacterString(reader, &hinfo.cpu));
      KDNS_RETURN_IF_PARSE_ERROR(ReadCharacterString(reader, &hinfo.os));
      *rdata = std::move(hinfo);
      return ParseError::kOk;
    }
    default:
      return ParseError::kBadRdata;  // not reached: IsTypedRdata guards
  }
}

}  // namespace

bool IsTypedRdata(RrType type, RrClass cls) {
  switch (type) {
    case RrType::kA:
    case RrType::kAaaa:
    case RrType::kSrv:
      return cls == RrClass::kIn;
    case RrType::kNs:
    case RrType::kCname:
    case RrType::kPtr:
    case RrType::kDname:
    case RrType::kSoa:
    case RrType::kMx:
    case RrType::kTxt:
    case RrType::kHinfo:
      return true;
    default:
      return false;
  }
}

bool RdataMatches(const Rdata& rdata, RrType type, RrClass cls) {
  if (std::holds_alternative<RdataOpaque>(rdata)) return true;
  if (!IsTypedRdata(type, cls)) return false;
  switch (type) {
    case RrType::kA:
      return std::holds_alternative<RdataA>(rdata) && std::get<RdataA>(rdata).address.is_v4();
    case RrType::kAaaa:
      return std::holds_alternative<RdataAaaa>(rdata) && std::get<RdataAaaa>(rdata).address.is_v6();
    case RrType::kNs:
      return std::holds_alternative<RdataNs>(rdata);
    case RrType::kCname:
      return std::holds_alternative<RdataCname>(rdata);
    case RrType::kPtr:
      return std::holds_alternative<RdataPtr>(rdata);
    case RrType::kDname:
      return std::holds_alternative<RdataDname>(rdata);
    case RrType::kSoa:
      return std::holds_alternative<RdataSoa>(rdata);
    case RrType::kMx:
      return std::holds_alternative<RdataMx>(rdata);
    case RrType::kSrv:
      return std::holds_alternative<RdataSrv>(rdata);
    case RrType::kTxt:
      return std::holds_alternative<RdataTxt>(rdata);
    case RrType::kHinfo:
      return std::holds_alternative<RdataHinfo>(rdata);
    default:
      return false;
  }
}

ParseError ParseRdata(std::span<const uint8_t> message, size_t offset, size_t rdlength, RrType type,
                      RrClass cls, Rdata* rdata, NameStarts* starts) {
  if (offset > message.size() || message.size() - offset < rdlength) {
    return ParseError::kTruncated;
  }
  if (!IsTypedRdata(type, cls)) {
    auto bytes = message.subspan(offset, rdlength);
    *rdata = RdataOpaque{std::vector<uint8_t>(bytes.begin(), bytes.end())};
    return ParseError::kOk;
  }
  WireReader reader(message, offset, offset + rdlength, starts);
  KDNS_RETURN_IF_PARSE_ERROR(ParseTyped(reader, type, rdata));
  return reader.AtEnd() ? ParseError::kOk : ParseError::kRdataLengthMismatch;
}

}  // namespace kdns::dns
