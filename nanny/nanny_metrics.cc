#include "nanny/nanny_metrics.h"

#include <span>
#include <vector>

#include "common/metrics/text_format.h"

namespace kdns::nanny {
namespace {

void Family(std::string& out, std::string_view name, std::string_view type, std::string_view help) {
  metrics::AppendFamilyHeader(out, name, help, type);
}

void Sample(std::string& out, std::string_view name, double value,
            const std::vector<std::string>& label_names = {},
            const std::vector<std::string>& label_values = {}) {
  metrics::AppendSampleLine(out, name, label_names, label_values, metrics::FormatValue(value));
}

}  // namespace

std::string NannyMetrics::Render() const {
  std::string out;
  Family(out, "kdns_nanny_config_generation", "gauge",
         "Configurations the nanny applied to the child since it started (the first is 1).");
  Sample(out, "kdns_nanny_config_generation", static_cast<double>(config_generation));
  Family(out, "kdns_nanny_config_info", "gauge",
         "The version (a hash of the ConfigMap values) of the configuration applied last.");
  Sample(out, "kdns_nanny_config_info", 1, {"version"}, {config_version});
  Family(out, "kdns_nanny_config_last_applied_timestamp_seconds", "gauge",
         "When the configuration was applied last (Unix time).");
  Sample(out, "kdns_nanny_config_last_applied_timestamp_seconds", config_last_applied_unix_s);
  Family(out, "kdns_nanny_config_error", "gauge",
         "1 while the newest ConfigMap values are rejected and the previous ones serve.");
  Sample(out, "kdns_nanny_config_error", config_error ? 1 : 0);
  Family(out, "kdns_nanny_config_updates_rejected_total", "counter",
         "ConfigMap updates rejected as invalid (each version counted once).");
  Sample(out, "kdns_nanny_config_updates_rejected_total",
         static_cast<double>(config_updates_rejected));
  Family(out, "kdns_nanny_config_read_errors_total", "counter",
         "Reads of the ConfigMap directory that failed.");
  Sample(out, "kdns_nanny_config_read_errors_total", static_cast<double>(config_read_errors));
  Family(out, "kdns_nanny_child_restarts_total", "counter",
         "Child restarts: crash (it exited unasked), config (restart mode, to apply a change).");
  Sample(out, "kdns_nanny_child_restarts_total", static_cast<double>(restarts_config), {"reason"},
         {"config"});
  Sample(out, "kdns_nanny_child_restarts_total", static_cast<double>(restarts_crash), {"reason"},
         {"crash"});
  Family(out, "kdns_nanny_child_reloads_total", "counter",
         "Configurations handed to the running child in place (SIGHUP).");
  Sample(out, "kdns_nanny_child_reloads_total", static_cast<double>(reloads));
  Family(out, "kdns_nanny_stub_lookups_total", "counter",
         "Lookups of stub servers given as host names, by result.");
  Sample(out, "kdns_nanny_stub_lookups_total", static_cast<double>(stub_lookups_failed), {"result"},
         {"failed"});
  Sample(out, "kdns_nanny_stub_lookups_total", static_cast<double>(stub_lookups_ok), {"result"},
         {"ok"});
  Family(out, "kdns_nanny_stub_hosts_unresolved", "gauge",
         "Stub servers given as host names with no address known (left out of the routing).");
  Sample(out, "kdns_nanny_stub_hosts_unresolved", static_cast<double>(stub_hosts_unresolved));
  return out;
}

std::string NodeLocalMetrics::Render() const {
  std::string out;
  Family(out, "kdns_nodelocal_rules_ok", "gauge",
         "1 while every node-local firewall rule is in place, as of the last check.");
  Sample(out, "kdns_nodelocal_rules_ok", rules_ok ? 1 : 0);
  Family(out, "kdns_nodelocal_interface_ok", "gauge",
         "1 while the node-local interface is up and holds every -localip address, as of the "
         "last check.");
  Sample(out, "kdns_nodelocal_interface_ok", interface_ok ? 1 : 0);
  Family(out, "kdns_nodelocal_repairs_total", "counter",
         "Node-local rules or addresses the sync found missing or altered and put back.");
  Sample(out, "kdns_nodelocal_repairs_total", static_cast<double>(address_repairs), {"what"},
         {"addresses"});
  Sample(out, "kdns_nodelocal_repairs_total", static_cast<double>(rule_repairs), {"what"},
         {"rules"});
  Family(out, "kdns_nodelocal_sync_errors_total", "counter",
         "Checks or repairs of the node-local set-up that failed.");
  Sample(out, "kdns_nodelocal_sync_errors_total", static_cast<double>(sync_errors));
  Family(out, "kdns_nodelocal_firewall_info", "gauge",
         "The firewall backend of the node-local rules: nftables, iptables or none.");
  Sample(out, "kdns_nodelocal_firewall_info", 1, {"backend"}, {firewall_backend});
  Family(out, "kdns_nodelocal_tcp_migrate_req", "gauge",
         "1 when net.ipv4.tcp_migrate_req is on, so that an update moves the TCP connections "
         "the old node cache has not accepted to the new one instead of resetting them.");
  Sample(out, "kdns_nodelocal_tcp_migrate_req", tcp_migrate_req ? 1 : 0);
  return out;
}

}  // namespace kdns::nanny
