#include "http/transport/client_address.hpp"

namespace bitnet::http {

namespace net = boost::asio;
using net::ip::address;

namespace {

/// IPv4-mapped IPv6 (a dual-stack socket's view of an IPv4 peer) as the IPv4 address it is.
address plain(const address& a) {
    if (a.is_v6() && a.to_v6().is_v4_mapped())
        return net::ip::make_address_v4(net::ip::v4_mapped, a.to_v6());
    return a;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t'))
        s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t'))
        s.remove_suffix(1);
    return s;
}

} // namespace

result<trusted_proxies> trusted_proxies::parse(const std::vector<std::string>& entries) {
    trusted_proxies t;
    for (const auto& e : entries) {
        boost::system::error_code ec;
        if (e.find('/') != std::string::npos) {
            if (e.find(':') != std::string::npos) {
                auto n = net::ip::make_network_v6(e, ec);
                if (!ec) {
                    t.nets_.emplace_back(n.canonical());
                    continue;
                }
            } else {
                auto n = net::ip::make_network_v4(e, ec);
                if (!ec) {
                    t.nets_.emplace_back(n.canonical());
                    continue;
                }
            }
        } else {
            const auto a = net::ip::make_address(e, ec);
            if (!ec) {
                const auto p = plain(a);
                if (p.is_v4())
                    t.nets_.emplace_back(net::ip::network_v4(p.to_v4(), 32));
                else
                    t.nets_.emplace_back(net::ip::network_v6(p.to_v6(), 128));
                continue;
            }
        }
        return error{errc::invalid_argument,
                     "trusted_proxies: '" + e +
                         "' is neither an IP address nor a network (ADDRESS/PREFIX)",
                     "trusted_proxies"};
    }
    return t;
}

bool trusted_proxies::contains(const address& a) const {
    const auto p = plain(a);
    for (const auto& n : nets_) {
        if (const auto* v4 = std::get_if<net::ip::network_v4>(&n)) {
            if (p.is_v4() && net::ip::network_v4(p.to_v4(), v4->prefix_length()).canonical() == *v4)
                return true;
        } else if (const auto* v6 = std::get_if<net::ip::network_v6>(&n)) {
            if (p.is_v6() && net::ip::network_v6(p.to_v6(), v6->prefix_length()).canonical() == *v6)
                return true;
        }
    }
    return false;
}

std::string client_address(const address& peer, std::string_view forwarded_for,
                           const trusted_proxies& trusted) {
    auto client = plain(peer);
    if (!trusted.contains(client) || forwarded_for.empty())
        return client.to_string();
    // From the nearest hop back: each trusted proxy vouches for the hop before it.
    while (!forwarded_for.empty()) {
        const auto comma = forwarded_for.rfind(',');
        const auto hop =
            trim(comma == std::string_view::npos ? forwarded_for : forwarded_for.substr(comma + 1));
        forwarded_for =
            comma == std::string_view::npos ? std::string_view{} : forwarded_for.substr(0, comma);
        boost::system::error_code ec;
        const auto a = net::ip::make_address(std::string(hop), ec);
        if (ec)
            break; // not an address: the last trusted hop is as far as anyone vouches
        client = plain(a);
        if (!trusted.contains(client))
            break;
    }
    return client.to_string();
}

std::string address_key(const std::string& address) {
    return "addr:" + address;
}

} // namespace bitnet::http
