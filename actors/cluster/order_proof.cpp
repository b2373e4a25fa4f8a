#include "actors/cluster/order_proof.hpp"

#include <array>
#include <cstdlib>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

namespace bitnet::actors {

namespace {

/// How far an order's issue time may be from the target's clock (a replay window, and room for
/// clocks a little apart).
constexpr std::int64_t max_skew_ms = 5 * 60 * 1000;

/// The bytes the proof covers: each field with its length, so no two orders share them.
std::string canonical(const msg::node_order& o) {
    std::string out;
    for (const std::string* f : {&o.kind, &o.load.alias, &o.load.path, &o.load.version,
                                 &o.load.device, &o.issuer, &o.target}) {
        out += std::to_string(f->size());
        out += ':';
        out += *f;
        out += ';';
    }
    out += o.load.warmup ? "warmup;" : "no-warmup;";
    out += std::to_string(o.issued_ms);
    return out;
}

} // namespace

std::string order_proof(const std::string& key, const msg::node_order& o) {
    const auto text = canonical(o);
    std::array<unsigned char, EVP_MAX_MD_SIZE> mac{};
    unsigned int len = 0;
    if (HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
             reinterpret_cast<const unsigned char*>(text.data()), text.size(), mac.data(),
             &len) == nullptr)
        return {};
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(2 * len);
    for (unsigned int i = 0; i < len; ++i) {
        out += hex[mac[i] >> 4];
        out += hex[mac[i] & 15];
    }
    return out;
}

std::string order_refusal(const msg::node_order& o, const std::string& self,
                          const std::vector<std::string>& admin_keys, bool admin_open,
                          std::int64_t now_ms) {
    if (o.target != self)
        return "the order names node '" + o.target + "', not this one";
    if (admin_keys.empty())
        return admin_open ? std::string()
                          : "model management is disabled on this node (no admin key)";
    if (o.proof.empty())
        return "the order carries no admin key proof (its node has no admin key)";
    if (std::llabs(now_ms - o.issued_ms) > max_skew_ms)
        return "the order was issued more than five minutes from this node's clock";
    for (const auto& k : admin_keys) {
        const auto want = order_proof(k, o);
        if (want.size() == o.proof.size() &&
            CRYPTO_memcmp(want.data(), o.proof.data(), want.size()) == 0)
            return {};
    }
    return "no admin key of this node gives the order's proof";
}

} // namespace bitnet::actors
