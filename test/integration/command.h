// Runs real client programs (dig, kdig, curl) for integration tests and normalizes their
// output. Blocking; call from the test thread while servers run on their own threads.
#pragma once

#include <string>
#include <vector>

namespace kdns::testing {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr, interleaved
};

// Runs argv (no shell) with a hard time limit, capturing its output.
CommandResult RunCommand(const std::vector<std::string>& argv, int timeout_s = 20);

// True when `program` is on PATH.
bool HaveProgram(const std::string& program);

// The resource-record lines of dig/kdig output (`+noall +answer +authority +additional`),
// with comments and blank lines dropped and each run of white space folded to one space.
std::vector<std::string> RecordLines(const std::string& output);

// The header flags dig/kdig print (`;; flags: qr aa rd ra;`), e.g. {"qr","aa","rd","ra"}.
std::vector<std::string> HeaderFlags(const std::string& output);

}  // namespace kdns::testing
