#include "conf/host_port.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <cstring>

#include <arpa/inet.h>

namespace bitnet::conf {
namespace {

error refused(std::string_view text, const std::string& why) {
    return {errc::invalid_argument, "'" + std::string(text) + "' is not HOST:PORT: " + why};
}

bool is_alnum(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0;
}

/// RFC 1123 host name: dot-separated labels of 1..63 letters, digits and '-', no label starting
/// or ending with '-', 253 characters at most.
bool is_dns_name(std::string_view name) {
    if (name.empty() || name.size() > 253)
        return false;
    while (true) {
        const auto dot = name.find('.');
        const auto label = name.substr(0, dot);
        if (label.empty() || label.size() > 63 || label.front() == '-' || label.back() == '-')
            return false;
        if (!std::all_of(label.begin(), label.end(),
                         [](char c) { return is_alnum(c) || c == '-'; }))
            return false;
        if (dot == std::string_view::npos)
            return true;
        name.remove_prefix(dot + 1);
    }
}

bool parse_v4(std::string_view s, std::array<unsigned char, 4>& out) {
    const std::string z(s); // inet_pton needs a terminated string
    return ::inet_pton(AF_INET, z.c_str(), out.data()) == 1;
}

bool parse_v6(std::string_view s, std::array<unsigned char, 16>& out) {
    const std::string z(s);
    return ::inet_pton(AF_INET6, z.c_str(), out.data()) == 1;
}

} // namespace

result<host_port> parse_host_port(std::string_view text) {
    std::string_view host, port;
    if (!text.empty() && text.front() == '[') {
        const auto close = text.find(']');
        if (close == std::string_view::npos)
            return refused(text, "'[' without a closing ']'");
        host = text.substr(1, close - 1);
        if (close + 1 >= text.size() || text[close + 1] != ':')
            return refused(text, "expected ':PORT' after ']'");
        port = text.substr(close + 2);
        std::array<unsigned char, 16> v6{};
        if (!parse_v6(host, v6))
            return refused(text, "'" + std::string(host) + "' in brackets is not an IPv6 address");
    } else {
        const auto colon = text.rfind(':');
        if (colon == std::string_view::npos)
            return refused(text, "no ':PORT'");
        host = text.substr(0, colon);
        port = text.substr(colon + 1);
        if (host.find(':') != std::string_view::npos)
            return refused(text, "an IPv6 address needs brackets, e.g. [::1]:7070");
        if (host.empty())
            return refused(text, "empty host (use 0.0.0.0 for every IPv4 interface)");
        // Digits and dots only: an IPv4 address or nothing (a name of numeric labels would be
        // read as a partial address by some resolvers).
        const bool numeric = std::all_of(host.begin(), host.end(), [](char c) {
            return c == '.' || std::isdigit(static_cast<unsigned char>(c)) != 0;
        });
        std::array<unsigned char, 4> v4{};
        if (numeric && !parse_v4(host, v4))
            return refused(text, "'" + std::string(host) + "' is not an IPv4 address");
        if (!numeric && !is_dns_name(host))
            return refused(text, "'" + std::string(host) +
                                     "' is not a host name (letters, digits, '-' and '.')");
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (port.empty() || ec != std::errc{} || end != port.data() + port.size() || value > 65535)
        return refused(text, "port '" + std::string(port) + "' is not a number in 0..65535");
    return host_port{std::string(host), static_cast<std::uint16_t>(value)};
}

std::string to_string(const host_port& hp) {
    const bool v6 = hp.host.find(':') != std::string::npos;
    return (v6 ? "[" + hp.host + "]" : hp.host) + ":" + std::to_string(hp.port);
}

bool is_loopback_host(std::string_view host) {
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    constexpr std::string_view localhost = "localhost";
    if (host.size() == localhost.size() &&
        std::equal(host.begin(), host.end(), localhost.begin(),
                   [](char a, char b) { return std::tolower(static_cast<unsigned char>(a)) == b; }))
        return true;
    if (std::array<unsigned char, 4> v4{}; parse_v4(host, v4))
        return v4[0] == 127;
    if (std::array<unsigned char, 16> v6{}; parse_v6(host, v6)) {
        static constexpr std::array<unsigned char, 16> one{0, 0, 0, 0, 0, 0, 0, 0,
                                                           0, 0, 0, 0, 0, 0, 0, 1};
        static constexpr std::array<unsigned char, 12> mapped{0, 0, 0, 0, 0,    0,
                                                              0, 0, 0, 0, 0xff, 0xff};
        return v6 == one ||
               (std::memcmp(v6.data(), mapped.data(), mapped.size()) == 0 && v6[12] == 127);
    }
    return false;
}

bool is_valid_node_name(std::string_view name) {
    return !name.empty() && name.size() <= 64 && std::all_of(name.begin(), name.end(), [](char c) {
        return is_alnum(c) || c == '.' || c == '_' || c == '-';
    });
}

std::string trusted_proxy_problem(std::string_view entry) {
    boost::system::error_code ec;
    const std::string v(entry);
    if (v.find('/') == std::string::npos)
        (void)boost::asio::ip::make_address(v, ec);
    else if (v.find(':') != std::string::npos)
        (void)boost::asio::ip::make_network_v6(v, ec);
    else
        (void)boost::asio::ip::make_network_v4(v, ec);
    return ec ? "'" + v + "' is neither an IP address nor an ADDRESS/PREFIX network" : "";
}

} // namespace bitnet::conf
