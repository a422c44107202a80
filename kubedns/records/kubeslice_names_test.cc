#include "kubedns/records/kubeslice_names.h"

#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "common/limits/limits.h"

namespace kdns::kubedns {
namespace {

using limits::Limit;
using limits::LimitHits;

dns::Name Name(const std::string& text) { return *dns::Name::FromText(text); }

IpAddress Ip(const char* text) { return *IpAddress::Parse(text); }

// A kubeslice import in `ns` named `name`, created at `created_s` (unset: no timestamp),
// whose endpoints have `ips` and whose spec names `dns_name` and `aliases`.
k8s::KubesliceServiceImport Import(const std::string& ns, const std::string& name,
                                   std::optional<int64_t> created_s, const std::string& dns_name,
                                   std::vector<std::string> aliases,
                                   const std::vector<const char*>& ips) {
  k8s::KubesliceServiceImport import;
  import.meta.ns = ns;
  import.meta.name = name;
  import.creation_unix_s = created_s;
  import.dns_name = dns_name;
  import.aliases = std::move(aliases);
  for (const char* ip : ips) import.endpoints.push_back({"", Ip(ip)});
  return import;
}

std::vector<std::string> Addresses(const KubesliceNamesWriter& writer, const std::string& name) {
  const std::vector<IpAddress>* ips = writer.names()->Find(Name(name));
  if (ips == nullptr) return {"NXDOMAIN"};
  std::vector<std::string> out;
  for (const auto& ip : *ips) out.push_back(ip.ToString());
  return out;
}

KubesliceNamesWriter Writer(const ImportLimits& limits = {}) {
  KubesliceNamesWriter writer;
  writer.SetZone("slice.local");
  writer.SetLimits(limits);
  return writer;
}

using Ips = std::vector<std::string>;
const Ips kNxDomain{"NXDOMAIN"};

}  // namespace

TEST_CASE("kubeslice keys are the labels reversed, and back", "[kubedns][multicluster]") {
  CHECK(KubesliceNames::KeyOfName("a.b.slice.local") == "local.slice.b.a");
  CHECK(KubesliceNames::NameOfKey("local.slice.b.a") == "a.b.slice.local");
  CHECK(KubesliceNames::KeyOfName("local") == "local");
}

TEST_CASE("a kubeslice name is found, its parents are empty non-terminals, the rest NXDOMAIN",
          "[kubedns][multicluster]") {
  KubesliceNamesWriter writer = Writer();
  writer.Upsert(
      Import("x", "a", 1, "a.x.svc.slice.local", {"a-b.x.svc.slice.local"}, {"10.0.0.1"}));
  CHECK(Addresses(writer, "a.x.svc.slice.local") == (Ips{"10.0.0.1"}));
  CHECK(Addresses(writer, "a-b.x.svc.slice.local") == (Ips{"10.0.0.1"}));
  CHECK(Addresses(writer, "x.svc.slice.local").empty());
  CHECK(Addresses(writer, "svc.slice.local").empty());
  CHECK(Addresses(writer, "b.x.svc.slice.local") == kNxDomain);
  CHECK(Addresses(writer, "a.a.x.svc.slice.local") == kNxDomain);
  CHECK(Addresses(writer, "y.svc.slice.local") == kNxDomain);
  CHECK(Addresses(writer, "a-b.svc.slice.local") == kNxDomain);  // "x" is not a prefix of "x-"
  // A label with a dot in it is not two labels.
  CHECK(writer.names()->Find(Name("a\\.x.svc.slice.local")) == nullptr);
  CHECK(writer.names()->size() == 2);  // parents are not stored
}

TEST_CASE("every name of one kubeslice import shares one address vector",
          "[kubedns][multicluster]") {
  // Why an import costs its names plus its addresses, not their product.
  std::vector<std::string> aliases;
  aliases.reserve(50);
  for (int i = 0; i < 50; ++i) aliases.push_back("alias" + std::to_string(i) + ".slice.local");
  KubesliceNamesWriter writer = Writer();
  writer.Upsert(
      Import("x", "a", 1, "a.x.svc.slice.local", aliases, {"10.0.0.1", "10.0.0.2", "10.0.0.2"}));
  const auto* first = writer.names()->Find(Name("alias0.slice.local"));
  REQUIRE(first != nullptr);
  CHECK(first->size() == 2);  // distinct
  CHECK(writer.names()->Find(Name("alias49.slice.local")) == first);
  CHECK(writer.names()->Find(Name("a.x.svc.slice.local")) == first);
  CHECK(writer.endpoints() == 3);
}

TEST_CASE("a kubeslice name that is not a DNS name inside the zone is skipped and counted",
          "[kubedns][multicluster]") {
  // The import of the issue: one alias of 20,000 one-letter labels (40 KB).
  std::string huge;
  for (int i = 0; i < 20'000; ++i) huge += "a.";
  huge += "slice.local";
  const std::string long_label = std::string(64, 'l') + ".slice.local";
  std::string long_name;  // 254 characters
  while (long_name.size() < 254 - 12) long_name += "b.";
  long_name = long_name.substr(0, 254 - 12) + ".slice.local";
  REQUIRE(long_name.size() == 254);
  const std::vector<std::string> bad = {
      huge,           long_label,       long_name,         "a.example.com",  "slice.local",
      "xslice.local", "a..slice.local", "a_b.slice.local", "-a.slice.local", "a b.slice.local"};
  KubesliceNamesWriter writer = Writer();
  const uint64_t before = LimitHits(Limit::kImportInvalid);
  std::vector<std::string> aliases = bad;
  aliases.push_back("good.slice.local");
  writer.Upsert(Import("x", "a", 1, "a.x.svc.slice.local", aliases, {"10.0.0.1"}));
  CHECK(LimitHits(Limit::kImportInvalid) - before == bad.size());
  CHECK(Addresses(writer, "a.x.svc.slice.local") == (Ips{"10.0.0.1"}));
  CHECK(Addresses(writer, "good.slice.local") == (Ips{"10.0.0.1"}));
  CHECK(writer.names()->size() == 2);
  CHECK(writer.imports() == 1);

  // The longest valid name: 253 characters, labels of 63.
  const std::string longest = std::string(63, 'a') + "." + std::string(63, 'b') + "." +
                              std::string(63, 'c') + "." + std::string(49, 'd') + ".slice.local";
  REQUIRE(longest.size() == 253);
  writer.Upsert(Import("x", "a", 1, "", {longest}, {"10.0.0.1"}));
  CHECK(Addresses(writer, longest) == (Ips{"10.0.0.1"}));

  SECTION("an endpoint's dnsName is checked the same way") {
    auto import = Import("x", "e", 1, "", {}, {});
    import.endpoints.push_back({"e1.c1.slice.local", Ip("10.0.0.7")});
    import.endpoints.push_back({huge, Ip("10.0.0.8")});
    const uint64_t hits = LimitHits(Limit::kImportInvalid);
    writer.Upsert(import);
    CHECK(LimitHits(Limit::kImportInvalid) - hits == 1);
    CHECK(Addresses(writer, "e1.c1.slice.local") == (Ips{"10.0.0.7"}));
  }
}

TEST_CASE("a kubeslice import over a cap is not served at all, and counted",
          "[kubedns][multicluster]") {
  ImportLimits limits;
  limits.max_aliases = 3;
  limits.max_endpoints = 2;
  limits.max_name_bytes = 100;
  KubesliceNamesWriter writer = Writer(limits);
  writer.Upsert(Import("x", "other", 1, "other.x.svc.slice.local", {}, {"10.9.0.1"}));
  auto served =
      Import("x", "a", 1, "a.x.svc.slice.local",
             {"b.slice.local", "c.slice.local", "d.slice.local"}, {"10.0.0.1", "10.0.0.2"});
  writer.Upsert(served);
  CHECK(Addresses(writer, "d.slice.local") == (Ips{"10.0.0.1", "10.0.0.2"}));

  auto over = served;
  SECTION("aliases") { over.aliases.push_back("e.slice.local"); }
  SECTION("endpoints") { over.endpoints.push_back({"", Ip("10.0.0.3")}); }
  SECTION("bytes of names") { over.dns_name = std::string(90, 'a') + ".slice.local"; }
  const uint64_t before = LimitHits(Limit::kImportTooLarge);
  writer.Upsert(over);
  CHECK(LimitHits(Limit::kImportTooLarge) - before == 1);
  // The new version is refused whole, and the old one is gone with it.
  CHECK(Addresses(writer, "a.x.svc.slice.local") == kNxDomain);
  CHECK(Addresses(writer, "b.slice.local") == kNxDomain);
  CHECK(writer.imports() == 1);
  CHECK(Addresses(writer, "other.x.svc.slice.local") == (Ips{"10.9.0.1"}));
  // Back under the caps: served again.
  writer.Upsert(served);
  CHECK(Addresses(writer, "b.slice.local") == (Ips{"10.0.0.1", "10.0.0.2"}));
}

TEST_CASE("a kubeslice name belongs to the namespace whose import named it first",
          "[kubedns][multicluster]") {
  KubesliceNamesWriter writer = Writer();
  const auto owner =
      Import("a", "web", 100, "web.a.svc.slice.local", {"shared.slice.local"}, {"10.0.0.1"});
  const auto thief =
      Import("b", "web", 200, "web.b.svc.slice.local", {"shared.slice.local"}, {"10.6.6.6"});
  const uint64_t before = LimitHits(Limit::kImportNameConflict);

  SECTION("whichever arrives first") {
    SECTION("the claimant first") {
      writer.Upsert(owner);
      writer.Upsert(thief);
    }
    SECTION("the later import first") {
      writer.Upsert(thief);
      CHECK(Addresses(writer, "shared.slice.local") == (Ips{"10.6.6.6"}));
      writer.Upsert(owner);
    }
    SECTION("in one list") { writer.Replace({thief, owner}); }
    CHECK(Addresses(writer, "shared.slice.local") == (Ips{"10.0.0.1"}));
    CHECK(Addresses(writer, "web.b.svc.slice.local") == (Ips{"10.6.6.6"}));  // its own names stay
    CHECK(LimitHits(Limit::kImportNameConflict) - before == 1);
    // Counted once when it appears, not again for every later change.
    writer.Upsert(Import("c", "x", 50, "x.c.svc.slice.local", {}, {"10.0.0.3"}));
    CHECK(LimitHits(Limit::kImportNameConflict) - before == 1);

    // The claimant deleted: the other namespace's import takes the name.
    writer.Delete("a", "web");
    CHECK(Addresses(writer, "shared.slice.local") == (Ips{"10.6.6.6"}));
    // And back: the older import wins again.
    writer.Upsert(owner);
    CHECK(Addresses(writer, "shared.slice.local") == (Ips{"10.0.0.1"}));
  }

  SECTION("imports of one namespace add up") {
    writer.Upsert(owner);
    writer.Upsert(Import("a", "web2", 300, "", {"shared.slice.local"}, {"10.0.0.2"}));
    CHECK(Addresses(writer, "shared.slice.local") == (Ips{"10.0.0.1", "10.0.0.2"}));
    CHECK(Addresses(writer, "web.a.svc.slice.local") == (Ips{"10.0.0.1"}));
    CHECK(LimitHits(Limit::kImportNameConflict) == before);
  }

  SECTION("the same creation time: the namespace decides; none: after every timestamp") {
    writer.Upsert(Import("z", "web", 100, "", {"tie.slice.local"}, {"10.0.0.26"}));
    writer.Upsert(Import("m", "web", 100, "", {"tie.slice.local"}, {"10.0.0.13"}));
    writer.Upsert(Import("a", "web", std::nullopt, "", {"tie.slice.local"}, {"10.0.0.1"}));
    CHECK(Addresses(writer, "tie.slice.local") == (Ips{"10.0.0.13"}));
  }

  SECTION("an endpoint's dnsName is claimed the same way") {
    auto other = Import("b", "ep", 200, "", {}, {});
    other.endpoints.push_back({"web.a.svc.slice.local", Ip("10.6.6.7")});
    writer.Upsert(owner);
    writer.Upsert(other);
    CHECK(Addresses(writer, "web.a.svc.slice.local") == (Ips{"10.0.0.1"}));
    CHECK(LimitHits(Limit::kImportNameConflict) - before == 1);
  }
}

TEST_CASE("a kubeslice writer with the zone off keeps nothing and counts nothing",
          "[kubedns][multicluster]") {
  KubesliceNamesWriter writer;
  const uint64_t before = LimitHits(Limit::kImportInvalid);
  writer.Upsert(Import("x", "a", 1, "a.x.svc.slice.local", {}, {"10.0.0.1"}));
  CHECK(writer.imports() == 0);
  CHECK(writer.names()->size() == 0);
  CHECK(LimitHits(Limit::kImportInvalid) == before);
}

}  // namespace kdns::kubedns
