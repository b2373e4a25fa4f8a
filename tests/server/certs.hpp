// Certificates made at test time by the project's own deploy/cluster/make-certs.sh (the openssl
// command, nothing downloaded): a CA in a directory, made on first use, and a pair per name,
// each with subjectAltName DNS:NAME, DNS:localhost, IP:127.0.0.1 and both serverAuth and
// clientAuth, so the same script serves the cluster's mutual TLS and the HTTPS listener.
#pragma once

#include "support/run_process.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace bitnet::test {

/// deploy/cluster/make-certs.sh of this source tree (the test data directory is tests/data).
inline std::string make_certs_script() {
    return (std::filesystem::path(BITNET_TEST_DATA_DIR).parent_path().parent_path() / "deploy" /
            "cluster" / "make-certs.sh")
        .string();
}

/// Runs make-certs.sh DIR NAMES... (a CA in DIR, made on first use, and a pair per name).
inline void make_certs(const std::string& dir, const std::string& names) {
    const auto script = make_certs_script();
    REQUIRE_MESSAGE(std::filesystem::exists(script), script);
    const auto cmd = "bash '" + script + "' '" + dir + "' " + names + " >'" + dir + ".out' 2>&1";
    const int rc = std::system(cmd.c_str());
    auto out = read_file(dir + ".out");
    REQUIRE_MESSAGE(rc == 0, std::string(out.begin(), out.end()));
}

} // namespace bitnet::test
