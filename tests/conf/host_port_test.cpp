// conf/host_port.hpp: the HOST:PORT parser, the loopback test and node names.
#include "conf/host_port.hpp"

#include <doctest/doctest.h>

#include <string>

using bitnet::conf::host_port;
using bitnet::conf::is_loopback_host;
using bitnet::conf::is_valid_node_name;
using bitnet::conf::parse_host_port;

TEST_CASE("parse_host_port accepts IPv4, names and bracketed IPv6") {
    struct want {
        std::string text, host;
        unsigned port;
    };
    for (const auto& w : {want{"10.0.0.5:7070", "10.0.0.5", 7070}, want{"0.0.0.0:0", "0.0.0.0", 0},
                          want{"localhost:65535", "localhost", 65535},
                          want{"bitnet-serve-0.bitnet-serve-peers.ns.svc.cluster.local:7070",
                               "bitnet-serve-0.bitnet-serve-peers.ns.svc.cluster.local", 7070},
                          want{"Node1:1", "Node1", 1}, want{"[::1]:7070", "::1", 7070},
                          want{"[fe80::1:2]:80", "fe80::1:2", 80},
                          want{"[::ffff:127.0.0.1]:9", "::ffff:127.0.0.1", 9}}) {
        INFO(w.text);
        auto r = parse_host_port(w.text);
        REQUIRE(r.has_value());
        CHECK(r->host == w.host);
        CHECK(r->port == w.port);
        // to_string gives back the text (brackets restored for IPv6).
        CHECK(bitnet::conf::to_string(*r) == w.text);
    }
}

TEST_CASE("parse_host_port refuses malformed endpoints and says why") {
    struct bad {
        std::string text, why;
    };
    for (const auto& b : {bad{"", "no ':PORT'"},
                          bad{"host", "no ':PORT'"},
                          bad{":7070", "empty host"},
                          bad{"host:", "port ''"},
                          bad{"host:65536", "0..65535"},
                          bad{"host:-1", "0..65535"},
                          bad{"host:80x", "0..65535"},
                          bad{"host: 80", "0..65535"},
                          bad{"::1:7070", "needs brackets"},
                          bad{"[::1]7070", "':PORT' after ']'"},
                          bad{"[::1:7070", "closing ']'"},
                          bad{"[10.0.0.1]:80", "not an IPv6 address"},
                          bad{"[nothex::g]:80", "not an IPv6 address"},
                          bad{"256.0.0.1:80", "not an IPv4 address"},
                          bad{"1.2.3:80", "not an IPv4 address"},
                          bad{"-host:80", "not a host name"},
                          bad{"host-:80", "not a host name"},
                          bad{"a..b:80", "not a host name"},
                          bad{"under_score:80", "not a host name"},
                          bad{"sp ace:80", "not a host name"},
                          bad{std::string(64, 'a') + ":80", "not a host name"},
                          bad{"*:80", "not a host name"}}) {
        INFO(b.text);
        auto r = parse_host_port(b.text);
        REQUIRE_FALSE(r.has_value());
        CHECK(r.error().message.find(b.why) != std::string::npos);
        CHECK(r.error().message.find("'" + b.text + "'") != std::string::npos);
    }
    // 63-character labels and 253 characters in all are still names.
    const std::string label(63, 'a');
    CHECK(parse_host_port(label + "." + label + ":1").has_value());
    CHECK_FALSE(
        parse_host_port(label + "." + label + "." + label + "." + label + ":1").has_value());
}

TEST_CASE("is_loopback_host: 127/8, ::1, IPv4-mapped 127/8 and localhost only") {
    for (const char* h : {"127.0.0.1", "127.1.2.3", "127.255.255.255", "::1", "[::1]",
                          "::ffff:127.0.0.1", "localhost", "LocalHost"})
        CHECK_MESSAGE(is_loopback_host(h), h);
    for (const char* h :
         {"0.0.0.0", "128.0.0.1", "126.255.255.255", "10.0.0.1", "::", "::2", "::ffff:10.0.0.1",
          "localhost.example", "mylocalhost", "", "127.0.0", "::1:7070"})
        CHECK_MESSAGE(!is_loopback_host(h), h);
}

TEST_CASE("node names: 1..64 letters, digits, '.', '_', '-'") {
    CHECK(is_valid_node_name("bitnet-serve-0"));
    CHECK(is_valid_node_name("a"));
    CHECK(is_valid_node_name("Node_1.rack-2"));
    CHECK(is_valid_node_name(std::string(64, 'n')));
    CHECK_FALSE(is_valid_node_name(""));
    CHECK_FALSE(is_valid_node_name(std::string(65, 'n')));
    for (const char* n : {"a b", "a/b", "a:b", "n\xc3\xa9", "a\nb", "$(POD_NAME)"})
        CHECK_MESSAGE(!is_valid_node_name(n), n);
}

TEST_CASE("trusted_proxies entries: addresses and networks, IPv4 or IPv6, anything else named") {
    using bitnet::conf::trusted_proxy_problem;
    CHECK(trusted_proxy_problem("10.0.0.1").empty());
    CHECK(trusted_proxy_problem("10.0.0.0/8").empty());
    CHECK(trusted_proxy_problem("::1").empty());
    CHECK(trusted_proxy_problem("fd00::/8").empty());
    CHECK(trusted_proxy_problem("proxy.internal").find("'proxy.internal'") != std::string::npos);
    CHECK_FALSE(trusted_proxy_problem("10.0.0.0/40").empty());
    CHECK_FALSE(trusted_proxy_problem("10.0.0.1/").empty());
}
