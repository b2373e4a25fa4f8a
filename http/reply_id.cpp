#include "http/reply_id.hpp"

#include <array>
#include <stdexcept>

#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>

namespace bitnet::http {

std::string reply_id_of(const std::string& req_id) {
    static const std::array<unsigned char, 32> key = [] {
        std::array<unsigned char, 32> k{};
        if (RAND_bytes(k.data(), static_cast<int>(k.size())) != 1)
            throw std::runtime_error("no random bytes for reply ids");
        return k;
    }();
    unsigned char mac[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
         reinterpret_cast<const unsigned char*>(req_id.data()), req_id.size(), mac, &n);
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    for (unsigned i = 0; i < 16; ++i) {
        out += hex[mac[i] >> 4];
        out += hex[mac[i] & 15];
    }
    return out;
}

} // namespace bitnet::http
