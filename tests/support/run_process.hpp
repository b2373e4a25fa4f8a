// Runs one of the project's executables (built next to the tests) and captures what it printed.
#pragma once

#include "support/test_data.hpp"

#include <cstdlib>
#include <string>

#include <sys/wait.h>

namespace bitnet::test {

struct process_result {
    int exit_code = -1;
    std::string out;
    std::string err;
};

/// `tool` is a binary of tools/ (e.g. "bitnet-cli"); `args` is appended as is (quote paths with
/// spaces yourself); `stdin_text` is fed on standard input. `bound_s` > 0 runs it under
/// `timeout`, for a tool that is expected to exit but would run on (a server) if a check broke:
/// the test then sees exit code 124 instead of hanging.
inline process_result run_tool(const std::string& tool, const std::string& args,
                               const std::string& stdin_text = "", unsigned bound_s = 0) {
    scratch_dir dir;
    const std::string in = dir.file("stdin"), out = dir.file("stdout"), err = dir.file("stderr");
    write_file(in, std::vector<std::uint8_t>(stdin_text.begin(), stdin_text.end()));
    const std::string bound = bound_s > 0 ? "timeout " + std::to_string(bound_s) + " " : "";
    const std::string cmd = bound + std::string(BITNET_TOOLS_DIR) + "/" + tool + " " + args +
                            " <'" + in + "' >'" + out + "' 2>'" + err + "'";
    const int status = std::system(cmd.c_str());
    process_result r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    const auto o = read_file(out), e = read_file(err);
    r.out.assign(o.begin(), o.end());
    r.err.assign(e.begin(), e.end());
    return r;
}

} // namespace bitnet::test
