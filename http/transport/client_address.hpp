// Who a client is when no API key says so: its peer address, or, when the peer is a proxy the
// operator trusts (`trusted_proxies`), the address that proxy vouches for in X-Forwarded-For.
// Fair shares and per-key quotas count a client so in the default configuration (no API keys),
// and the listener caps connections per peer address (`max_connections_per_client`), trusted
// proxies exempt. Internal to http/.
#pragma once

#include "common/error.hpp"

#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/network_v4.hpp>
#include <boost/asio/ip/network_v6.hpp>

#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace bitnet::http {

/// The operator's trusted proxies: addresses and CIDR networks, IPv4 or IPv6.
class trusted_proxies {
public:
    trusted_proxies() = default;
    /// Parses "10.0.0.0/8", "192.168.1.7", "::1", "fd00::/8"; invalid_argument naming the
    /// entry that is neither an address nor a network.
    [[nodiscard]] static result<trusted_proxies> parse(const std::vector<std::string>& entries);

    [[nodiscard]] bool contains(const boost::asio::ip::address& a) const;
    [[nodiscard]] bool empty() const noexcept { return nets_.empty(); }

private:
    std::vector<std::variant<boost::asio::ip::network_v4, boost::asio::ip::network_v6>> nets_;
};

/// The client of a request that came from `peer`: the peer itself, unless it is a trusted proxy
/// and `forwarded_for` (X-Forwarded-For, comma-separated, the nearest hop last) names one. Then
/// the hops are read from the nearest back, skipping trusted proxies: the first that is not one
/// is the client (what a client wrote itself further left is never believed). A hop that is not
/// an address ends the walk at the last trusted hop. IPv4-mapped IPv6 peers read as IPv4.
[[nodiscard]] std::string client_address(const boost::asio::ip::address& peer,
                                         std::string_view forwarded_for,
                                         const trusted_proxies& trusted);

/// An address as a client key ("addr:" + its text), so it never equals an API key's scope.
[[nodiscard]] std::string address_key(const std::string& address);

} // namespace bitnet::http
