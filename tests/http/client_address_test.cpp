// Who a client is without an API key (http/transport/client_address.hpp): its peer address, or
// the address a trusted proxy vouches for in X-Forwarded-For, read from the nearest hop back.
#include "http/transport/client_address.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using http::client_address;
using http::trusted_proxies;

namespace {

boost::asio::ip::address ip(const char* s) {
    return boost::asio::ip::make_address(s);
}

trusted_proxies proxies(std::vector<std::string> entries) {
    auto t = trusted_proxies::parse(entries);
    REQUIRE(t.has_value());
    return *t;
}

} // namespace

TEST_CASE("trusted_proxies: addresses and networks, IPv4 and IPv6, and a bad entry is named") {
    const auto t = proxies({"10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"});
    CHECK(t.contains(ip("10.200.3.4")));
    CHECK(t.contains(ip("192.168.1.7")));
    CHECK_FALSE(t.contains(ip("192.168.1.8")));
    CHECK(t.contains(ip("::1")));
    CHECK(t.contains(ip("fd12::5")));
    CHECK_FALSE(t.contains(ip("fe80::1")));
    CHECK_FALSE(t.contains(ip("11.0.0.1")));
    // A dual-stack socket's view of an IPv4 peer counts as that IPv4 address.
    CHECK(t.contains(ip("::ffff:10.1.2.3")));
    CHECK(proxies({}).empty());

    const auto bad = trusted_proxies::parse({"10.0.0.0/8", "proxy.internal"});
    REQUIRE_FALSE(bad.has_value());
    CHECK(bad.error().message.find("'proxy.internal'") != std::string::npos);
    CHECK_FALSE(trusted_proxies::parse({"10.0.0.0/33"}).has_value());
}

TEST_CASE("client_address: the peer, unless a trusted proxy vouches for another") {
    const auto t = proxies({"10.0.0.0/8"});
    // No proxy trusted, or an untrusted peer: X-Forwarded-For is the client's own words.
    CHECK(client_address(ip("203.0.113.5"), "1.2.3.4", proxies({})) == "203.0.113.5");
    CHECK(client_address(ip("203.0.113.5"), "1.2.3.4", t) == "203.0.113.5");
    // A trusted peer without the header is the client itself.
    CHECK(client_address(ip("10.0.0.2"), "", t) == "10.0.0.2");
    // One trusted hop: the address it forwarded for.
    CHECK(client_address(ip("10.0.0.2"), "198.51.100.7", t) == "198.51.100.7");
    // The nearest untrusted hop counts; what the client wrote further left is never believed.
    CHECK(client_address(ip("10.0.0.2"), "6.6.6.6, 198.51.100.7, 10.0.0.9", t) == "198.51.100.7");
    // A hop that is not an address ends the walk at the last trusted hop.
    CHECK(client_address(ip("10.0.0.2"), "198.51.100.7, unknown", t) == "10.0.0.2");
    CHECK(client_address(ip("10.0.0.2"), "198.51.100.7,  10.0.0.9 ", t) == "198.51.100.7");
    // IPv4-mapped peers read as IPv4.
    CHECK(client_address(ip("::ffff:203.0.113.5"), "", proxies({})) == "203.0.113.5");
    // A client key never equals an API key's scope.
    CHECK(http::address_key("203.0.113.5") == "addr:203.0.113.5");
}
